package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The annotated example token file and the token file reference, from
// this package's directory.
var (
	exampleToken   = filepath.Join("..", "..", "docs", "examples", "token.yaml")
	tokenReference = filepath.Join("..", "..", "docs", "token-file.md")
)

// TestExampleTokenFileLoads: the annotated example loads with the loader
// the services use, and sets every key the token file has, nested ones
// included, so that it shows them all.
func TestExampleTokenFileLoads(t *testing.T) {
	tok, err := LoadToken(exampleToken, "", "")
	if err != nil {
		t.Fatalf("the example token file does not load: %v", err)
	}
	if tok.Mint == "" || tok.MaxSupply != "1000000000" || tok.Decimals == nil || len(tok.OfficialPairs) == 0 ||
		len(tok.Exchanges) < 2 || len(tok.Links) == 0 || tok.PriceMoveWarning == "" {
		t.Errorf("example token = %+v", tok)
	}
	b, err := os.ReadFile(exampleToken)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	collectKeys(&doc, "", set)
	for _, key := range tokenKeys(reflect.TypeFor[Token](), "") {
		if !set[key] {
			t.Errorf("the example does not show %s", key)
		}
	}
}

// TestTokenReferenceNamesEveryKey: docs/token-file.md describes every key
// of the token file, nested ones included.
func TestTokenReferenceNamesEveryKey(t *testing.T) {
	b, err := os.ReadFile(tokenReference)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, key := range tokenKeys(reflect.TypeFor[Token](), "") {
		if !strings.Contains(doc, "`"+key+"`") {
			t.Errorf("docs/token-file.md does not describe `%s`", key)
		}
	}
}

// tokenKeys lists the yaml keys of struct type t as paths: mint,
// links[].kind, ...
func tokenKeys(t reflect.Type, where string) []string {
	var out []string
	for name, ft := range yamlFields(t) {
		key := join(where, name)
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		out = append(out, key)
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
			out = append(out, tokenKeys(ft.Elem(), key+"[]")...)
		}
	}
	return out
}

// collectKeys records the key paths a YAML document sets, in
// tokenKeys' form.
func collectKeys(n *yaml.Node, where string, set map[string]bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			collectKeys(c, where, set)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			collectKeys(c, where+"[]", set)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := join(where, n.Content[i].Value)
			set[key] = true
			collectKeys(n.Content[i+1], key, set)
		}
	}
}
