package edge

import (
	_ "embed"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/tokendata/tokendata/services/edge/answer"
)

// openAPIYAML is the OpenAPI 3.1 document of the public API, authored in
// YAML and served as JSON at /api/openapi.json.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIYAML returns the OpenAPI 3.1 document as authored (YAML).
func OpenAPIYAML() []byte { return append([]byte(nil), openAPIYAML...) }

// openAPIJSON converts the embedded document to JSON, once, at start.
func openAPIJSON() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	if err := checkStringKeys(doc, "$"); err != nil {
		return nil, err
	}
	return answer.EncodeJSON(doc)
}

// checkStringKeys refuses mappings with non-string keys (an unquoted
// response code in the YAML), which JSON cannot represent.
func checkStringKeys(v any, path string) error {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if err := checkStringKeys(c, path+"."+k); err != nil {
				return err
			}
		}
	case map[any]any:
		return fmt.Errorf("openapi.yaml: %s has a non-string key (quote response codes)", path)
	case []any:
		for i, c := range t {
			if err := checkStringKeys(c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}
