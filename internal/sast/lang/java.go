package lang

import (
	sitter "github.com/smacker/go-tree-sitter"
	"github.com/smacker/go-tree-sitter/java"
)

// Java is the Java grammar.
type Java struct{}

func init() { Register(Java{}) }

// Name implements Grammar.
func (Java) Name() string { return "java" }

// Extensions implements Grammar.
func (Java) Extensions() []string { return []string{".java"} }

// Language implements Grammar.
func (Java) Language() *sitter.Language { return java.GetLanguage() }

// Symbols implements Grammar: classes, interfaces, enums, methods,
// constructors and fields, with their enclosing class.
func (Java) Symbols(root *sitter.Node, src []byte) []Symbol {
	var out []Symbol
	var walk func(n *sitter.Node, container string)
	walk = func(n *sitter.Node, container string) {
		for i := 0; i < int(n.NamedChildCount()); i++ {
			c := n.NamedChild(i)
			switch c.Type() {
			case "class_declaration", "interface_declaration", "enum_declaration", "record_declaration":
				name := Text(c.ChildByFieldName("name"), src)
				out = append(out, Symbol{Kind: "class", Name: name, Container: container, StartLine: Line(c), EndLine: EndLine(c)})
				if b := c.ChildByFieldName("body"); b != nil {
					walk(b, name)
				}
				continue
			case "method_declaration":
				out = append(out, Symbol{Kind: "method", Name: Text(c.ChildByFieldName("name"), src), Container: container, StartLine: Line(c), EndLine: EndLine(c)})
			case "constructor_declaration":
				out = append(out, Symbol{Kind: "constructor", Name: Text(c.ChildByFieldName("name"), src), Container: container, StartLine: Line(c), EndLine: EndLine(c)})
			case "field_declaration":
				for j := 0; j < int(c.NamedChildCount()); j++ {
					d := c.NamedChild(j)
					if d.Type() == "variable_declarator" {
						out = append(out, Symbol{Kind: "field", Name: Text(d.ChildByFieldName("name"), src), Container: container, StartLine: Line(c), EndLine: EndLine(c)})
					}
				}
			}
			walk(c, container)
		}
	}
	walk(root, "")
	return out
}
