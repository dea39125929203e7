package chartcheck

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ValuesDoc writes the chart's values reference (docs/chart-values.md)
// from values.yaml: every key whose comment starts with "# --" (the
// convention of values.yaml), with its type, its default and that
// comment, in a table per top-level section.
func ValuesDoc(values []byte) (string, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(values, &root); err != nil {
		return "", fmt.Errorf("values.yaml: %w", err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return "", fmt.Errorf("values.yaml: not a mapping")
	}
	var b strings.Builder
	b.WriteString(`# The chart's values

Every value of the tokendata chart, with its type, its default and what it
does: written by ` + "`make docs`" + ` from the comments of
` + "`charts/tokendata/values.yaml`" + ` (do not edit this page; a test fails
when it differs from that file). ` + "`values.schema.json`" + ` checks each
value's type and name at install; installation and operations are in
[the chart's README](../charts/tokendata/README.md).

`)
	var top []string // sections with a documented key, in order
	sections := map[string][]row{}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		var rows []row
		walkValues(k.Value, k, v, &rows)
		if len(rows) == 0 {
			continue
		}
		section := k.Value
		if len(rows) == 1 && rows[0].key == k.Value {
			section = "Top level" // a key with no documented key under it
		}
		if _, seen := sections[section]; !seen {
			top = append(top, section)
		}
		sections[section] = append(sections[section], rows...)
	}
	b.WriteString("Sections:")
	for i, s := range top {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " [%s](#%s)", s, anchorOf(s))
	}
	b.WriteString(".\n")
	for _, s := range top {
		fmt.Fprintf(&b, "\n## %s\n\n| key | type | default | description |\n|---|---|---|---|\n", s)
		for _, r := range sections[s] {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.key, r.typ, r.def, r.doc)
		}
	}
	return b.String(), nil
}

type row struct{ key, typ, def, doc string }

// walkValues appends the documented keys under path (k: v).
func walkValues(path string, k, v *yaml.Node, rows *[]row) {
	if doc, ok := valueDoc(k.HeadComment); ok {
		*rows = append(*rows, row{key: path, typ: typeOf(v), def: defaultOf(v), doc: doc})
	}
	if v.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(v.Content); i += 2 {
			walkValues(path+"."+v.Content[i].Value, v.Content[i], v.Content[i+1], rows)
		}
	}
}

// valueDoc is a "# --" comment's text on one line: from "# --" on, the
// lines before it are a section's own comment.
func valueDoc(comment string) (string, bool) {
	lines := strings.Split(comment, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "# --") {
			start = i
		}
	}
	if start < 0 {
		return "", false
	}
	var words []string
	for i, l := range lines[start:] {
		l = strings.TrimSpace(l)
		if i == 0 {
			l = strings.TrimPrefix(l, "# --")
		} else {
			l = strings.TrimPrefix(l, "#")
		}
		if l = strings.TrimSpace(l); l != "" {
			words = append(words, l)
		}
	}
	return cell(strings.Join(words, " ")), true
}

func resolve(v *yaml.Node) *yaml.Node {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	return v
}

func typeOf(v *yaml.Node) string {
	v = resolve(v)
	switch v.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "list"
	}
	switch v.Tag {
	case "!!int":
		return "int"
	case "!!float":
		return "number"
	case "!!bool":
		return "bool"
	case "!!null":
		return "null"
	}
	return "string"
}

// maxDefault bounds a default written in the table; a longer one is in
// values.yaml.
const maxDefault = 100

func defaultOf(v *yaml.Node) string {
	v = resolve(v)
	if v.Kind == yaml.ScalarNode {
		if v.Tag == "!!str" {
			return "`" + cell(fmt.Sprintf("%q", v.Value)) + "`"
		}
		return "`" + cell(v.Value) + "`"
	}
	flow := flowOf(v)
	if len(flow) > maxDefault {
		return "see values.yaml"
	}
	return "`" + cell(flow) + "`"
}

// flowOf is v in YAML's flow style on one line, without its comments.
func flowOf(v *yaml.Node) string {
	c := deepCopy(v)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	_ = enc.Encode(c)
	_ = enc.Close()
	return strings.TrimSpace(buf.String())
}

func deepCopy(v *yaml.Node) *yaml.Node {
	v = resolve(v)
	c := *v
	c.HeadComment, c.LineComment, c.FootComment, c.Anchor = "", "", "", ""
	c.Style = yaml.FlowStyle
	if v.Kind == yaml.ScalarNode {
		c.Style = v.Style &^ (yaml.LiteralStyle | yaml.FoldedStyle)
	}
	c.Content = nil
	for _, n := range v.Content {
		c.Content = append(c.Content, deepCopy(n))
	}
	return &c
}

// cell makes s fit in a table cell, as text (no HTML).
var cellText = strings.NewReplacer("\n", " ", "|", `\|`, "<", "&lt;", ">", "&gt;")

func cell(s string) string { return cellText.Replace(s) }

// anchorOf is the anchor GitHub gives a heading of plain words.
func anchorOf(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
