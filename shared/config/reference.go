package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/tokendata/tokendata/shared/contract"
)

// Variable is one environment variable of a config struct, as the
// generated reference of every variable (docs/environment.md) shows it.
// Everything in it comes from the struct's tags and its default values,
// so the reference cannot drift from what the services read.
type Variable struct {
	// Name is the variable, prefix included.
	Name string
	// Type is what the value must be: string, secret, integer, duration
	// or boolean.
	Type string
	// Default is the value taken when the variable is unset, as a user
	// would write it; empty when there is none.
	Default string
	// Min and Max are the bounds (`min` and `max` tags), empty when none.
	Min, Max string
	// Doc says what the variable does (`doc` tag; "{domain}" in it is
	// replaced by the domain of a per-domain timing).
	Doc string
}

// DefaultCommon is the common configuration on an empty environment: the
// envDefault of every field and the default timing of each domain.
func DefaultCommon() Common {
	c := Default[Common]()
	c.setDefaultTimings()
	return c
}

// setDefaultTimings sets every domain's timing to the default.
func (c *Common) setDefaultTimings() {
	dt := contract.DefaultTimings
	c.Market, c.Supply = DomainTiming(dt[contract.DomainMarket]), DomainTiming(dt[contract.DomainSupply])
	c.Metadata, c.Holders = DomainTiming(dt[contract.DomainMetadata]), DomainTiming(dt[contract.DomainHolders])
}

// Variables lists the variables of cfg, a struct with `env` tags (or a
// pointer to one) holding the defaults (DefaultCommon, a service's
// DefaultConfig), in field order, with prefix before every name. A field
// without a `doc` tag is listed with an empty Doc: the reference's test
// refuses that.
func Variables(cfg any, prefix string) []Variable {
	var out []Variable
	walkFields(reflect.Indirect(reflect.ValueOf(cfg)), prefix, func(key string, f reflect.StructField, v reflect.Value) {
		name, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		group := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(key, name), prefix), "_")
		out = append(out, Variable{
			Name:    key,
			Type:    typeName(f.Type),
			Default: defaultText(f, v),
			Min:     f.Tag.Get("min"),
			Max:     f.Tag.Get("max"),
			Doc:     strings.ReplaceAll(f.Tag.Get("doc"), "{domain}", strings.ToLower(group)),
		})
	})
	return out
}

var secretType = reflect.TypeFor[Secret]()

// typeName says what a field's value must be.
func typeName(t reflect.Type) string {
	switch t {
	case secretType:
		return "secret"
	case durationType:
		return "duration"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	}
	return "string"
}

// defaultText is the field's envDefault as written, else its default
// value when it has one (the timings), else "".
func defaultText(f reflect.StructField, v reflect.Value) string {
	if d, ok := f.Tag.Lookup("envDefault"); ok {
		return d
	}
	if v.Kind() == reflect.Bool { // unset is false
		return strconv.FormatBool(v.Bool())
	}
	if v.IsZero() {
		return ""
	}
	if v.Type() == durationType {
		return shortDuration(time.Duration(v.Int()))
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	return fmt.Sprint(v.Interface())
}

// shortDuration writes d as time.ParseDuration reads it, without the
// zero units time.Duration.String adds: 168h, not 168h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
