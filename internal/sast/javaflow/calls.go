package javaflow

import (
	"bufio"
	"path"
	"strconv"
	"strings"

	sitter "github.com/smacker/go-tree-sitter"
)

// sourceMethods are the request getters whose results an attacker controls.
var sourceMethods = map[string]bool{
	"getParameter": true, "getParameterValues": true, "getParameterMap": true, "getParameterNames": true,
	"getHeader": true, "getHeaders": true, "getHeaderNames": true, "getQueryString": true,
	"getCookies": true, "getReader": true, "getInputStream": true, "getRequestURI": true,
	"getRequestURL": true, "getPathInfo": true, "getPart": true, "getParts": true, "getRemoteUser": true,
	"getPathTranslated": true,
}

// sanitisers by method name: the categories a call's result is safe for.
var sanitisers = map[string][]string{
	"encodeForHTML": {"xss"}, "encodeForHTMLAttribute": {"xss"}, "encodeForJavaScript": {"xss"},
	"encodeForCSS": {"xss"}, "encodeForXML": {"xss"}, "encodeForXMLAttribute": {"xss"},
	"htmlEscape": {"xss"}, "escapeHtml": {"xss"}, "escapeHtml4": {"xss"}, "escapeXml": {"xss"},
	"forHtml": {"xss"}, "forHtmlContent": {"xss"}, "forHtmlAttribute": {"xss"}, "forJavaScript": {"xss"},
	"encodeForSQL": {"sqli"}, "encodeForLDAP": {"ldapi"}, "encodeForDN": {"ldapi"},
	"encodeForXPath": {"xpathi"}, "encodeForOS": {"cmdi"},
}

// nonStringResults are methods whose result carries no attacker text.
var nonStringResults = map[string]Kind{
	"equals": KBool, "equalsIgnoreCase": KBool, "contains": KBool, "startsWith": KBool, "endsWith": KBool,
	"isEmpty": KBool, "matches": KBool, "containsKey": KBool, "containsValue": KBool, "hasMoreElements": KBool,
	"hasNext": KBool, "exists": KBool, "isDirectory": KBool, "delete": KBool,
	"length": KInt, "size": KInt, "indexOf": KInt, "lastIndexOf": KInt, "compareTo": KInt, "hashCode": KInt,
	"parseInt": KInt, "parseLong": KInt, "parseDouble": KInt, "parseFloat": KInt, "read": KInt,
}

func argList(n *sitter.Node) []*sitter.Node {
	a := n.ChildByFieldName("arguments")
	if a == nil {
		return nil
	}
	var out []*sitter.Node
	for i := 0; i < int(a.NamedChildCount()); i++ {
		if c := a.NamedChild(i); !strings.HasSuffix(c.Type(), "comment") {
			out = append(out, c)
		}
	}
	return out
}

func (in *Interp) isSink(fr *frame, n *sitter.Node) bool {
	return fr.file.Path == in.sinkFile && n.StartByte() == in.sinkStart && n.EndByte() == in.sinkEnd
}

func (in *Interp) observe(fr *frame, n *sitter.Node, recv *Val, args []*Val, res *Val) {
	if !in.isSink(fr, n) {
		return
	}
	s := &in.Sink
	if !s.Reached {
		s.Reached, s.Recv, s.Args, s.Result = true, recv, args, res
		return
	}
	s.Recv = join(s.Recv, recv)
	s.Result = join(s.Result, res)
	for i := range args {
		if i < len(s.Args) {
			s.Args[i] = join(s.Args[i], args[i])
		} else {
			s.Args = append(s.Args, args[i])
		}
	}
}

func (in *Interp) call(fr *frame, e *env, n *sitter.Node) *Val {
	f := fr.file
	name := text(f, n.ChildByFieldName("name"))
	var recv *Val
	if o := n.ChildByFieldName("object"); o != nil {
		recv = in.eval(fr, e, o)
	}
	var args []*Val
	for _, a := range argList(n) {
		args = append(args, in.eval(fr, e, a))
	}
	res := in.dispatch(fr, e, n, name, recv, args)
	in.observe(fr, n, recv, args, res)
	return res
}

func arg(args []*Val, i int) *Val {
	if i < len(args) {
		return args[i]
	}
	return unknown
}

// propagate is the default for an unknown call: the result is tainted if
// the receiver or an argument is.
func propagate(f *File, n *sitter.Node, name string, recv *Val, args []*Val) *Val {
	t, san := deepTaint(append([]*Val{recv}, args...)...)
	if t == nil {
		return unknown
	}
	return tainted(t.with(step(f, n, "passes through "+name+"()")), san)
}

func (in *Interp) dispatch(fr *frame, e *env, n *sitter.Node, name string, recv *Val, args []*Val) *Val {
	f := fr.file
	// the request's getters are the sources
	if recv != nil && recv.O != nil && recv.O.Source {
		if sourceMethods[name] {
			what := "source: request." + name + "(" + joinText(f, argList(n)) + ") is attacker-controlled"
			return tainted(&Taint{Trail: []Step{step(f, n, what)}}, nil)
		}
		switch name {
		case "getSession":
			return objv(&Obj{Class: "HttpSession"})
		}
		return unknown
	}
	if cats, ok := sanitisers[name]; ok {
		t, san := deepTaint(args...)
		if t == nil {
			return unknownOf(KStr)
		}
		for _, c := range cats {
			san = addSan(san, c)
		}
		in.decide(f, n, name+"() encodes the value for "+strings.Join(cats, ","))
		return &Val{K: KStr, T: t.with(step(f, n, "encoded by "+name+"() (safe for "+strings.Join(cats, ",")+")")), San: san}
	}
	if k, ok := nonStringResults[name]; ok && !(recv != nil && recv.O != nil && isUserObj(recv.O)) {
		if recv != nil && recv.isStrConst() && len(args) <= 1 {
			if v := foldString(name, recv.S, args); v != nil {
				return v
			}
		}
		if name == "size" && recv != nil && recv.O != nil && !recv.O.ListLost && recv.O.Map == nil {
			return intv(int64(len(recv.O.List)))
		}
		return unknownOf(k)
	}
	// static receivers
	if recv != nil && recv.K == KClass {
		if v, ok := in.staticModel(fr, n, recv.S, name, args); ok {
			return v
		}
		if cf, cls := in.findClass(f, recv.S); cls != nil {
			if m := findMethod(cf, cls, name, len(args)); m != nil {
				return in.invoke(fr, n, cf, recv.S, cls, m, nil, args)
			}
		}
		return propagate(f, n, name, nil, args)
	}
	// implicit this or an enclosing class
	if recv == nil {
		if m := findMethod(f, fr.class, name, len(args)); m != nil {
			return in.invoke(fr, n, f, fr.cname, fr.class, m, fr.this, args)
		}
		for cn, cls := range f.Classes {
			if m := findMethod(f, cls, name, len(args)); m != nil {
				return in.invoke(fr, n, f, cn, cls, m, nil, args)
			}
		}
		return propagate(f, n, name, nil, args)
	}
	if recv.O != nil {
		if v, ok := in.objModel(fr, n, recv, name, args); ok {
			return v
		}
		if isUserObj(recv.O) {
			if cf, cls := in.findClass(f, recv.O.Class); cls != nil {
				if m := findMethod(cf, cls, name, len(args)); m != nil {
					return in.invoke(fr, n, cf, recv.O.Class, cls, m, recv, args)
				}
			}
		}
	}
	if recv.isStrConst() {
		if v := foldString(name, recv.S, args); v != nil {
			return v
		}
	}
	switch name {
	case "getClass", "getClassLoader":
		return unknown
	case "getResourceAsStream", "getResource":
		if a := arg(args, 0); a.isStrConst() {
			return objv(&Obj{Class: "Resource", Res: a.S})
		}
		return unknown
	case "getWriter", "getOutputStream":
		return objv(&Obj{Class: "Writer"})
	case "getSession":
		return objv(&Obj{Class: "HttpSession"})
	}
	return propagate(f, n, name, recv, args)
}

func joinText(f *File, ns []*sitter.Node) string {
	var parts []string
	for _, a := range ns {
		parts = append(parts, text(f, a))
	}
	return strings.Join(parts, ", ")
}

func isUserObj(o *Obj) bool {
	switch o.Class {
	case "StringBuilder", "StringBuffer", "HashMap", "Map", "List", "ArrayList", "LinkedList", "[]", "Properties",
		"Cipher", "MessageDigest", "Random", "SecureRandom", "Cookie", "Resource", "Writer", "HttpSession", "HttpServletRequest":
		return false
	}
	return o.Class != ""
}

// foldString computes String methods on a constant receiver.
func foldString(name, s string, args []*Val) *Val {
	a0 := arg(args, 0)
	switch name {
	case "charAt":
		if i, ok := num(a0); ok && i >= 0 && int(i) < len(s) {
			return charv(int64(s[i]))
		}
	case "length":
		return intv(int64(len(s)))
	case "toUpperCase":
		return str(strings.ToUpper(s))
	case "toLowerCase":
		return str(strings.ToLower(s))
	case "trim":
		return str(strings.TrimSpace(s))
	case "toString", "intern":
		return str(s)
	case "equals":
		if a0.isStrConst() {
			return boolv(s == a0.S)
		}
	case "isEmpty":
		return boolv(s == "")
	case "substring":
		i, ok := num(a0)
		if !ok || i < 0 || int(i) > len(s) {
			return nil
		}
		if len(args) == 1 {
			return str(s[i:])
		}
		if j, ok := num(arg(args, 1)); ok && j >= i && int(j) <= len(s) {
			return str(s[i:j])
		}
	}
	return nil
}

// staticModel handles calls on library classes.
func (in *Interp) staticModel(fr *frame, n *sitter.Node, class, name string, args []*Val) (*Val, bool) {
	f := fr.file
	switch {
	case name == "getInstance" || name == "getInstanceStrong":
		switch class {
		case "Cipher", "MessageDigest", "SecureRandom", "KeyGenerator", "Mac", "Signature", "KeyPairGenerator":
			o := &Obj{Class: class}
			if name == "getInstanceStrong" {
				o.Alg = str("strong")
			} else {
				o.Alg = arg(args, 0)
			}
			o.AlgStep = step(f, n, class+"."+name+"("+joinText(f, argList(n))+")")
			return objv(o), true
		}
	case class == "ThreadLocalRandom" && name == "current":
		return objv(&Obj{Class: "ThreadLocalRandom", AlgStep: step(f, n, "ThreadLocalRandom.current()")}), true
	case class == "Math" && name == "random":
		return unknownOf(KInt), true
	case class == "Arrays" && name == "asList", class == "List" && name == "of":
		return objv(&Obj{Class: "ArrayList", List: append([]*Val(nil), args...)}), true
	case class == "String" && (name == "valueOf" || name == "copyValueOf"):
		t, san := deepTaint(args...)
		if t == nil {
			if s, ok := toStr(arg(args, 0)); ok && len(args) == 1 {
				return str(s), true
			}
			return unknownOf(KStr), true
		}
		return &Val{K: KStr, T: t, San: san}, true
	case (class == "Integer" || class == "Long" || class == "Double" || class == "Float" || class == "Short") && strings.HasPrefix(name, "parse"):
		return unknownOf(KInt), true
	case class == "System" && (name == "getProperty" || name == "getenv" || name == "currentTimeMillis" || name == "nanoTime"):
		return unknown, true
	case class == "ESAPI" || (class == "Encode" && !strings.HasPrefix(name, "for")):
		return objv(&Obj{Class: "ESAPI"}), true
	case class == "Class" && name == "forName":
		return unknown, true
	}
	return nil, false
}

// objModel handles methods of modelled library objects.
func (in *Interp) objModel(fr *frame, n *sitter.Node, recv *Val, name string, args []*Val) (*Val, bool) {
	f := fr.file
	o := recv.O
	switch o.Class {
	case "ESAPI":
		return objv(o), true
	case "StringBuilder", "StringBuffer":
		switch name {
		case "append":
			o.Str = arith("+", orEmpty(o.Str), strOf(arg(args, 0)))
			return recv, true
		case "insert":
			o.Str = arith("+", strOf(arg(args, 1)), orEmpty(o.Str))
			return recv, true
		case "replace":
			t, san := deepTaint(o.Str, arg(args, 2))
			o.Str = &Val{K: KStr, T: t, San: san}
			return recv, true
		case "reverse", "deleteCharAt", "delete", "setLength":
			if o.Str != nil && o.Str.Con {
				o.Str = &Val{K: KStr}
			}
			return recv, true
		case "toString", "substring":
			return orEmpty(o.Str), true
		case "length":
			return unknownOf(KInt), true
		}
	case "HashMap", "Map":
		switch name {
		case "put", "putIfAbsent":
			k, v := arg(args, 0), arg(args, 1)
			if k.isStrConst() {
				if o.Map == nil {
					o.Map = map[string]*Val{}
				}
				o.Map[k.S] = v
			} else {
				o.MapAny = join(o.MapAny, v)
			}
			return unknown, true
		case "get", "getOrDefault", "remove":
			k := arg(args, 0)
			if k.isStrConst() && o.MapAny == nil {
				if v, ok := o.Map[k.S]; ok {
					what := "map.get(" + k.String() + ") returns the value stored under that key"
					if v.T == nil {
						what += ", " + v.String() + " (not the tainted one)"
					}
					in.decide(f, n, what)
					return v, true
				}
				if name == "getOrDefault" {
					return arg(args, 1), true
				}
				return &Val{K: KNull, Con: true}, true
			}
			return elementOf(recv), true
		case "keySet", "values", "entrySet":
			return objv(&Obj{Class: "ArrayList", List: mapValues(o), ListLost: true}), true
		}
	case "ArrayList", "List", "LinkedList", "[]":
		switch name {
		case "add", "addLast", "push", "offer":
			if len(args) == 2 {
				if i, ok := num(args[0]); ok && !o.ListLost && i >= 0 && int(i) <= len(o.List) {
					o.List = append(o.List[:i], append([]*Val{args[1]}, o.List[i:]...)...)
					return boolv(true), true
				}
				o.ListLost = true
				o.List = append(o.List, args[1])
				return boolv(true), true
			}
			o.List = append(o.List, arg(args, 0))
			return boolv(true), true
		case "addFirst":
			o.List = append([]*Val{arg(args, 0)}, o.List...)
			return unknown, true
		case "remove", "poll", "pop", "removeFirst":
			if name != "remove" {
				args = []*Val{intv(0)}
			}
			i, ok := num(arg(args, 0))
			if ok && arg(args, 0).K == KInt && !o.ListLost && i >= 0 && int(i) < len(o.List) {
				v := o.List[i]
				o.List = append(append([]*Val(nil), o.List[:i]...), o.List[i+1:]...)
				in.decide(f, n, "list element "+strconvI(i)+" removed: later positions shift down")
				return v, true
			}
			o.ListLost = true
			return elementOf(recv), true
		case "get", "elementAt":
			i, ok := num(arg(args, 0))
			if ok && !o.ListLost && i >= 0 && int(i) < len(o.List) {
				v := o.List[i]
				what := "list.get(" + strconvI(i) + ") returns the element at that position"
				if v.T == nil {
					what += ", " + v.String() + " (not the tainted one)"
				}
				in.decide(f, n, what)
				return v, true
			}
			return elementOf(recv), true
		case "set":
			i, ok := num(arg(args, 0))
			if ok && !o.ListLost && i >= 0 && int(i) < len(o.List) {
				old := o.List[i]
				o.List[i] = arg(args, 1)
				return old, true
			}
			o.ListLost = true
			o.List = append(o.List, arg(args, 1))
			return unknown, true
		case "iterator", "listIterator", "elements", "toArray", "subList", "stream":
			return recv, true
		case "next", "nextElement", "getFirst", "getLast", "peek":
			return elementOf(recv), true
		case "clear":
			o.List, o.ListLost = nil, false
			return unknown, true
		}
	case "Properties":
		switch name {
		case "load":
			if r := arg(args, 0); r.O != nil && r.O.Res != "" {
				in.loadProps(f, n, o, r.O.Res)
			} else {
				in.unknown("properties loaded from a stream that could not be resolved")
			}
			return unknown, true
		case "getProperty":
			k := arg(args, 0)
			if k.isStrConst() && o.PropsLoaded {
				if v, ok := o.Props[k.S]; ok {
					in.decideAt(o.PropsFile, o.PropsLine[k.S], o.PropsFile+" sets "+k.S+"="+v)
					return str(v), true
				}
				in.decide(f, n, o.PropsFile+" has no key "+k.S+": the default applies")
				if len(args) > 1 {
					return args[1], true
				}
				return &Val{K: KNull, Con: true}, true
			}
			in.unknown("value of property " + k.String() + " (properties not resolved)")
			return unknownOf(KStr), true
		case "setProperty", "put":
			return unknown, true
		}
	case "Cookie":
		switch name {
		case "setSecure", "setHttpOnly":
			if o.Fields == nil {
				o.Fields = map[string]*Val{}
			}
			o.Fields[name] = arg(args, 0)
			in.decide(f, n, "cookie."+name+"("+arg(args, 0).String()+")")
			return unknown, true
		case "getValue", "getName":
			if v, ok := o.Fields[name]; ok {
				return v, true
			}
		}
	case "Random", "SecureRandom", "Cipher", "MessageDigest":
		return unknownOf(KUnknown), true
	case "HttpSession":
		return unknown, true
	}
	return nil, false
}

func strconvI(i int64) string { return strconv.FormatInt(i, 10) }

func mapValues(o *Obj) []*Val {
	var out []*Val
	for _, v := range o.Map {
		out = append(out, v)
	}
	if o.MapAny != nil {
		out = append(out, o.MapAny)
	}
	return out
}

func orEmpty(v *Val) *Val {
	if v == nil {
		return str("")
	}
	return v
}

func strOf(v *Val) *Val {
	if v.O != nil && (v.O.Class == "StringBuilder" || v.O.Class == "StringBuffer") {
		return orEmpty(v.O.Str)
	}
	return v
}

func (in *Interp) newObj(fr *frame, e *env, n *sitter.Node) *Val {
	f := fr.file
	class := lastSeg(text(f, n.ChildByFieldName("type")))
	var args []*Val
	for _, a := range argList(n) {
		args = append(args, in.eval(fr, e, a))
	}
	res := in.construct(fr, n, class, args)
	in.observe(fr, n, nil, args, res)
	return res
}

func (in *Interp) construct(fr *frame, n *sitter.Node, class string, args []*Val) *Val {
	f := fr.file
	switch class {
	case "StringBuilder", "StringBuffer":
		o := &Obj{Class: class, Str: str("")}
		if a := arg(args, 0); len(args) > 0 && a.K != KInt {
			o.Str = strOf(a)
		}
		return objv(o)
	case "HashMap", "TreeMap", "LinkedHashMap", "Hashtable", "ConcurrentHashMap":
		return objv(&Obj{Class: "HashMap"})
	case "ArrayList", "LinkedList", "Vector", "ArrayDeque", "Stack":
		o := &Obj{Class: "ArrayList"}
		if len(args) == 1 && args[0].O != nil {
			o.List = append([]*Val(nil), args[0].O.List...)
			o.ListLost = args[0].O.ListLost
		}
		return objv(o)
	case "Properties":
		return objv(&Obj{Class: "Properties"})
	case "Random", "SecureRandom":
		return objv(&Obj{Class: class, Alg: str(class), AlgStep: step(f, n, "new "+class+"()")})
	case "Cookie":
		o := &Obj{Class: "Cookie", Fields: map[string]*Val{"getName": arg(args, 0), "getValue": arg(args, 1)}}
		return objv(o)
	case "String":
		t, san := deepTaint(args...)
		if t != nil {
			return &Val{K: KStr, T: t, San: san}
		}
		if a := arg(args, 0); a.isStrConst() && len(args) == 1 {
			return a
		}
		return unknownOf(KStr)
	case "FileInputStream", "FileReader", "InputStreamReader", "BufferedReader":
		if r := arg(args, 0); r.isStrConst() && strings.HasSuffix(r.S, ".properties") {
			return objv(&Obj{Class: "Resource", Res: r.S})
		}
	}
	if cf, cls := in.findClass(f, class); cls != nil && cls.Type() == "class_declaration" {
		o := &Obj{Class: class, Fields: map[string]*Val{}}
		this := objv(o)
		body := cls.ChildByFieldName("body")
		cfr := &frame{file: cf, class: cls, cname: class, this: this}
		for i := 0; body != nil && i < int(body.NamedChildCount()); i++ {
			c := body.NamedChild(i)
			if c.Type() != "field_declaration" || isStatic(cf, c) {
				continue
			}
			for j := 0; j < int(c.NamedChildCount()); j++ {
				d := c.NamedChild(j)
				if d.Type() == "variable_declarator" {
					v := unknown
					if val := d.ChildByFieldName("value"); val != nil && in.depth < maxDepth {
						v = in.eval(cfr, newEnv(), val)
					}
					o.Fields[text(cf, d.ChildByFieldName("name"))] = v
				}
			}
		}
		if ctor := findCtor(cf, cls, len(args)); ctor != nil {
			in.invoke(fr, n, cf, class, cls, ctor, this, args)
		}
		return this
	}
	if t, san := deepTaint(args...); t != nil {
		return &Val{K: KObj, T: t.with(step(f, n, "passes through new "+class+"()")), San: san, O: &Obj{Class: class}}
	}
	return objv(&Obj{Class: class})
}

func isStatic(f *File, decl *sitter.Node) bool {
	for i := 0; i < int(decl.NamedChildCount()); i++ {
		if c := decl.NamedChild(i); c.Type() == "modifiers" {
			return strings.Contains(text(f, c), "static")
		}
	}
	return false
}

func paramCount(m *sitter.Node) int {
	p := m.ChildByFieldName("parameters")
	if p == nil {
		return 0
	}
	c := 0
	for i := 0; i < int(p.NamedChildCount()); i++ {
		switch p.NamedChild(i).Type() {
		case "formal_parameter", "spread_parameter":
			c++
		}
	}
	return c
}

func findMethod(f *File, cls *sitter.Node, name string, arity int) *sitter.Node {
	if cls == nil {
		return nil
	}
	body := cls.ChildByFieldName("body")
	for i := 0; body != nil && i < int(body.NamedChildCount()); i++ {
		c := body.NamedChild(i)
		if c.Type() == "method_declaration" && text(f, c.ChildByFieldName("name")) == name && paramCount(c) == arity {
			return c
		}
	}
	return nil
}

func findCtor(f *File, cls *sitter.Node, arity int) *sitter.Node {
	body := cls.ChildByFieldName("body")
	for i := 0; body != nil && i < int(body.NamedChildCount()); i++ {
		c := body.NamedChild(i)
		if c.Type() == "constructor_declaration" && paramCount(c) == arity {
			return c
		}
	}
	return nil
}

// findClass resolves a class by simple name: the current file first, then
// <Name>.java anywhere in the repository.
func (in *Interp) findClass(f *File, name string) (*File, *sitter.Node) {
	if c, ok := f.Classes[name]; ok {
		return f, c
	}
	if name == "" || !isUpperIdent(name) || jdkClass[name] {
		return nil, nil
	}
	if r, ok := in.classes[name]; ok {
		return r.f, r.n
	}
	in.classes[name] = classRef{}
	for _, p := range in.prog.Repo.ByBase(name + ".java") {
		cf, err := in.prog.Load(in.ctx, p)
		if err != nil {
			continue
		}
		if c, ok := cf.Classes[name]; ok {
			in.Files[cf.Path] = true
			in.classes[name] = classRef{cf, c}
			return cf, c
		}
	}
	return nil, nil
}

type classRef struct {
	f *File
	n *sitter.Node
}

// jdkClass are library classes never looked up in the repository.
var jdkClass = map[string]bool{
	"String": true, "Math": true, "System": true, "Integer": true, "Long": true, "Arrays": true,
	"Cipher": true, "MessageDigest": true, "SecureRandom": true, "Random": true, "ESAPI": true,
	"URLDecoder": true, "URLEncoder": true, "Base64": true, "Files": true, "Paths": true, "Runtime": true,
	"HttpServletRequest": true, "HttpServletResponse": true, "Cookie": true, "Properties": true,
}

// classStatics are a class's static fields in this analysis (initialised
// on first use).
func (in *Interp) classStatics(f *File, name string, cls *sitter.Node) *Obj {
	if cls == nil {
		return nil
	}
	key := f.Path + "#" + name
	if o, ok := in.statics[key]; ok {
		return o
	}
	o := &Obj{Class: name, Fields: map[string]*Val{}}
	in.statics[key] = o
	body := cls.ChildByFieldName("body")
	fr := &frame{file: f, class: cls, cname: name}
	for i := 0; body != nil && i < int(body.NamedChildCount()); i++ {
		c := body.NamedChild(i)
		if c.Type() != "field_declaration" || !isStatic(f, c) {
			continue
		}
		for j := 0; j < int(c.NamedChildCount()); j++ {
			d := c.NamedChild(j)
			if d.Type() != "variable_declarator" {
				continue
			}
			v := &Val{K: KNull, Con: true}
			if val := d.ChildByFieldName("value"); val != nil {
				v = in.eval(fr, newEnv(), val)
			}
			o.Fields[text(f, d.ChildByFieldName("name"))] = v
		}
	}
	return o
}

// invoke interprets a method of the repository with the given arguments.
func (in *Interp) invoke(caller *frame, site *sitter.Node, f *File, cname string, cls, m *sitter.Node, this *Val, args []*Val) *Val {
	mname := text(f, m.ChildByFieldName("name"))
	if in.depth >= maxDepth {
		in.unknown("call depth limit reached at " + cname + "." + mname)
		return propagate(caller.file, site, mname, this, args)
	}
	in.depth++
	defer func() { in.depth-- }()
	in.Files[f.Path] = true
	fr := &frame{file: f, class: cls, cname: cname, this: this}
	e := newEnv()
	p := m.ChildByFieldName("parameters")
	k := 0
	for i := 0; p != nil && i < int(p.NamedChildCount()); i++ {
		c := p.NamedChild(i)
		if c.Type() != "formal_parameter" && c.Type() != "spread_parameter" {
			continue
		}
		name := text(f, c.ChildByFieldName("name"))
		if name == "" && c.NamedChildCount() > 0 {
			name = text(f, c.NamedChild(int(c.NamedChildCount())-1))
		}
		v := arg(args, k)
		if v.T != nil {
			v = withTaint(v, v.T.with(Step{File: f.Path, Line: lineOf(c), What: "enters " + cname + "." + mname + "() as " + name}))
		}
		e.vars[name] = v
		k++
	}
	body := m.ChildByFieldName("body")
	if body == nil {
		return propagate(caller.file, site, mname, this, args)
	}
	in.exec(fr, e, body)
	if fr.ret == nil {
		return unknown
	}
	r := fr.ret
	if r.T != nil {
		r = withTaint(r, r.T.with(Step{File: caller.file.Path, Line: lineOf(site), What: "returned by " + cname + "." + mname + "()"}))
	} else if r.Con {
		in.decide(caller.file, site, cname+"."+mname+"() returns the constant "+r.String())
	}
	return r
}

func lineOf(n *sitter.Node) int { return int(n.StartPoint().Row) + 1 }

// loadProps reads a properties resource from the repository.
func (in *Interp) loadProps(f *File, site *sitter.Node, o *Obj, res string) {
	base := path.Base(res)
	in.Searches++
	cands := in.prog.Repo.ByBase(base)
	var pick string
	for _, c := range cands {
		if strings.Contains(c, "resources/") || pick == "" {
			pick = c
		}
		if strings.HasSuffix(c, "/"+strings.TrimPrefix(res, "/")) {
			pick = c
			break
		}
	}
	if pick == "" {
		in.unknown("resource " + res + " not found in the repository")
		return
	}
	b, err := in.prog.Repo.Read(pick)
	if err != nil {
		in.unknown("resource " + res + ": " + err.Error())
		return
	}
	in.Files[pick] = true
	o.Props, o.PropsLine, o.PropsFile, o.PropsLoaded = map[string]string{}, map[string]int{}, pick, true
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		i := strings.IndexAny(l, "=:")
		if i < 0 {
			continue
		}
		k, v := strings.TrimSpace(l[:i]), strings.TrimSpace(l[i+1:])
		o.Props[k] = v
		o.PropsLine[k] = line
	}
	in.decide(f, site, "properties loaded from "+pick)
}
