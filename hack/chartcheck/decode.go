package chartcheck

import (
	"errors"
	"fmt"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"
)

// Object is one rendered object, decoded.
type Object struct {
	// Source is the template that rendered it.
	Source string
	// Typed is the object as its Go type (*appsv1.Deployment, ...).
	Typed runtime.Object
	// U is the object as rendered, field by field.
	U *unstructured.Unstructured
}

// GVK is the object's group, version and kind.
func (o Object) GVK() schema.GroupVersionKind { return o.U.GroupVersionKind() }

// Kind is the object's kind.
func (o Object) Kind() string { return o.U.GetKind() }

// Name is the object's name.
func (o Object) Name() string { return o.U.GetName() }

// String names the object in messages: Kind/name (template).
func (o Object) String() string { return fmt.Sprintf("%s/%s (%s)", o.Kind(), o.Name(), o.Source) }

// crdKinds are the custom resources the chart may render; they are checked
// against their Go types (the structured-merge-diff schema of client-go
// covers built-in kinds only).
var crdKinds = map[schema.GroupVersionKind]bool{
	monitoringv1.SchemeGroupVersion.WithKind("ServiceMonitor"):                                        true,
	monitoringv1.SchemeGroupVersion.WithKind("PrometheusRule"):                                        true,
	{Group: gatewayv1.GroupVersion.Group, Version: gatewayv1.GroupVersion.Version, Kind: "HTTPRoute"}: true,
}

// Decoder decodes rendered objects strictly.
type Decoder struct {
	scheme *runtime.Scheme
	strict runtime.Decoder
	typed  managedfields.TypeConverter
}

// NewDecoder builds a decoder over client-go's scheme plus the CRD kinds
// the chart uses.
func NewDecoder() (*Decoder, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, monitoringv1.AddToScheme, gatewayv1.Install,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return &Decoder{
		scheme: s,
		strict: json.NewSerializerWithOptions(json.DefaultMetaFactory, s, s,
			json.SerializerOptions{Yaml: true, Strict: true}),
		typed: applyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
	}, nil
}

// Decode decodes one YAML document. It fails on duplicate keys, on fields
// the kind does not have (case-only typos included), on wrong types, and
// on kinds that are neither built in nor one of the chart's CRD kinds.
func (d *Decoder) Decode(doc Document) (Object, error) {
	// Duplicate keys: the YAML-to-JSON step of the strict serializer
	// rejects them too, but say so before anything else.
	js, err := yaml.YAMLToJSONStrict(doc.YAML)
	if err != nil {
		return Object{}, fmt.Errorf("%s: YAML: %w", doc.Source, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		return Object{}, fmt.Errorf("%s: not a Kubernetes object: %w", doc.Source, err)
	}
	gvk := u.GroupVersionKind()
	o := Object{Source: doc.Source, U: u}
	if !d.scheme.Recognizes(gvk) {
		return o, fmt.Errorf("%s: kind %s is neither built in nor an allowed CRD kind", o, gvk)
	}
	// Unknown fields, case-only typos, duplicate fields, wrong types,
	// against the Go type.
	typed, _, err := d.strict.Decode(doc.YAML, nil, nil)
	if err != nil {
		return o, fmt.Errorf("%s: strict decoding: %w", o, err)
	}
	o.Typed = typed
	if crdKinds[gvk] {
		return o, nil
	}
	if !clientgoscheme.Scheme.Recognizes(gvk) {
		return o, fmt.Errorf("%s: kind %s is not an allowed CRD kind", o, gvk)
	}
	// The same against the OpenAPI schema, on the object as rendered
	// (the Go decoding above may have dropped what it did not know).
	if _, err := d.typed.ObjectToTyped(u); err != nil {
		return o, fmt.Errorf("%s: schema: %w", o, err)
	}
	return o, nil
}

// DecodeAll decodes every document of a manifest stream and joins the
// errors.
func (d *Decoder) DecodeAll(stream []byte) ([]Object, error) {
	var (
		objs []Object
		errs []error
	)
	for _, doc := range SplitDocuments(stream) {
		o, err := d.Decode(doc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, o)
	}
	return objs, errors.Join(errs...)
}
