package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// unknownKeys walks a decoded YAML document beside the Go type it is
// decoded into and reports every mapping key that type does not have,
// with its line, where it is (the token file, links[0], ...) and the
// nearest valid key at that level: a typo names itself and its fix
// ("oficial_pairs": did you mean "official_pairs"?). The yaml decoder's
// own message names the Go type instead (config.Token), which a user
// never wrote.
func unknownKeys(doc *yaml.Node, t reflect.Type) error {
	var errs []error
	walkKeys(doc, t, "", &errs, 0)
	return errors.Join(errs...)
}

// maxKeyDepth bounds the walk: the token file nests three levels deep,
// and aliases could otherwise loop.
const maxKeyDepth = 16

func walkKeys(n *yaml.Node, t reflect.Type, where string, errs *[]error, depth int) {
	if n == nil || depth > maxKeyDepth {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkKeys(c, t, where, errs, depth+1)
		}
	case yaml.AliasNode:
		walkKeys(n.Alias, t, where, errs, depth+1)
	case yaml.SequenceNode:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return // a type error: the decoder reports it
		}
		for i, c := range n.Content {
			walkKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i), errs, depth+1)
		}
	case yaml.MappingNode:
		if t.Kind() != reflect.Struct {
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" { // a merge: its keys belong to this mapping
				walkKeys(v, t, where, errs, depth+1)
				continue
			}
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, unknownKeyError(k, where, fields))
				continue
			}
			walkKeys(v, ft, join(where, k.Value), errs, depth+1)
		}
	}
}

// join names a key below where ("links[0].url", or "url" at the top).
func join(where, key string) string {
	if where == "" {
		return key
	}
	return where + "." + key
}

// unknownKeyError says which key is unknown, where, and what to write.
func unknownKeyError(k *yaml.Node, where string, fields map[string]reflect.Type) error {
	valid := make([]string, 0, len(fields))
	for name := range fields {
		valid = append(valid, name)
	}
	sort.Strings(valid)
	place := "the token file"
	if where != "" {
		place = where
	}
	msg := fmt.Sprintf("line %d: unknown key %q in %s", k.Line, clipKey(k.Value), place)
	if s, ok := nearestKey(k.Value, valid); ok {
		return fmt.Errorf("%s; did you mean %q?", msg, s)
	}
	return fmt.Errorf("%s; the keys there are %s", msg, strings.Join(valid, ", "))
}

// clipKey bounds a key quoted in an error: it is the user's text, of any
// length.
func clipKey(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}

// yamlFields maps the yaml key of each field of struct type t to its type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // yaml.v3's default
		}
		out[name] = f.Type
	}
	return out
}

// nearestKey is the valid key closest to key by edit distance (case
// ignored; a transposition of two letters counts as one edit), when it is
// close enough to be the key meant: at most a third of the longer one's
// length, and at least one edit allowed. Ties go to the first in order.
func nearestKey(key string, valid []string) (string, bool) {
	k := strings.ToLower(key)
	best, bestDist := "", -1
	for _, v := range valid {
		d := editDistance(k, v)
		if bestDist < 0 || d < bestDist {
			best, bestDist = v, d
		}
	}
	if bestDist < 0 {
		return "", false
	}
	limit := max(len([]rune(k)), len([]rune(best))) / 3
	return best, bestDist <= max(limit, 1)
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and transpositions of adjacent
// runes, each one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 256 || len(rb) > 256 { // a key that long is no typo
		return max(len(ra), len(rb))
	}
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
