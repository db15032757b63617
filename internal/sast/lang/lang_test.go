package lang

import (
	"context"
	"testing"
)

func TestJavaSymbols(t *testing.T) {
	src := []byte(`package a;

public class Outer {
    private int count = 0;

    public Outer() {}

    public String name(String s) {
        return s;
    }

    static class Inner {
        void run() {}
    }
}
`)
	g := ForFile("x/Outer.java")
	if g == nil || g.Name() != "java" || ByName("JAVA") == nil || ForFile("x.py") != nil {
		t.Fatal("grammar lookup")
	}
	tree, err := Parse(context.Background(), g, src)
	if err != nil {
		t.Fatal(err)
	}
	if tree.RootNode().HasError() {
		t.Fatal("parse error")
	}
	want := map[string]Symbol{
		"class Outer":             {Kind: "class", Name: "Outer", StartLine: 3, EndLine: 15},
		"field Outer.count":       {Kind: "field", Name: "count", Container: "Outer", StartLine: 4, EndLine: 4},
		"constructor Outer.Outer": {Kind: "constructor", Name: "Outer", Container: "Outer", StartLine: 6, EndLine: 6},
		"method Outer.name":       {Kind: "method", Name: "name", Container: "Outer", StartLine: 8, EndLine: 10},
		"class Outer.Inner":       {Kind: "class", Name: "Inner", Container: "Outer", StartLine: 12, EndLine: 14},
		"method Inner.run":        {Kind: "method", Name: "run", Container: "Inner", StartLine: 13, EndLine: 13},
	}
	got := map[string]Symbol{}
	for _, s := range g.Symbols(tree.RootNode(), src) {
		k := s.Kind + " " + s.Name
		if s.Container != "" {
			k = s.Kind + " " + s.Container + "." + s.Name
		}
		got[k] = s
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], w)
		}
	}
}
