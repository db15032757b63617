package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Limits of OpenAI strict structured outputs, enforced by ValidateStrict.
const (
	StrictMaxDepth      = 10
	StrictMaxProperties = 5000
	StrictMaxEnumValues = 1000
)

// JSON Schema types a normalized schema may use (one per node).
var scalarTypes = []string{"string", "number", "integer", "boolean"}

// hintKeywords are constraints the strict and compatible APIs reject or
// ignore; the normalizers move them into the description so the model still
// sees them.
var hintKeywords = []string{
	"default", "format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "examples",
}

// NormalizeStrict rewrites a draft-07 style JSON Schema into the subset
// OpenAI strict mode accepts: every node has exactly one type; every object
// lists all its properties in required and has additionalProperties:false;
// arrays have explicit items; $ref/$defs are inlined; allOf is merged;
// nullable unions (anyOf/oneOf with null, "type": [X, "null"], nullable) are
// collapsed to X; const becomes a one-value enum; enums are kept. Properties
// that were optional stay in required (strict mode needs it) and their
// description says so. Constructs with no faithful single-type form (real
// unions, free-form maps, bare items) are errors naming the path.
// The input is not modified. The result passes ValidateStrict.
func NormalizeStrict(schema map[string]any) (map[string]any, error) {
	out, err := normalize(schema, true)
	if err != nil {
		return nil, err
	}
	if err := ValidateStrict(out); err != nil {
		return nil, fmt.Errorf("normalized schema still invalid: %w", err)
	}
	return out, nil
}

// NormalizeCompatible rewrites a schema for OpenAI-compatible servers
// (Ollama, vLLM, LocalAI), which choke on some keywords: $ref is inlined,
// unions are collapsed (the first non-null branch wins), every node gets a
// single type (inferred, else "string"), arrays get items (default string),
// and keywords outside the common subset are dropped (constraints move into
// the description). Objects keep their original required list.
func NormalizeCompatible(schema map[string]any) (map[string]any, error) {
	return normalize(schema, false)
}

func normalize(schema map[string]any, strict bool) (map[string]any, error) {
	n := &normalizer{strict: strict}
	root, err := jsonCopy(schema)
	if err != nil {
		return nil, err
	}
	n.defs = map[string]any{}
	for _, k := range []string{"$defs", "definitions"} {
		if d, ok := root[k].(map[string]any); ok {
			for name, v := range d {
				n.defs["#/"+k+"/"+name] = v
			}
		}
	}
	if _, hasType := root["type"]; !hasType && !hasAny(root, "properties", "$ref", "allOf", "anyOf", "oneOf") {
		root["type"] = "object"
	}
	out := n.node(root, "", 0)
	if len(n.errs) > 0 {
		return nil, errors.Join(n.errs...)
	}
	if t, _ := out["type"].(string); t != "object" {
		return nil, fmt.Errorf("schema: top level must be an object, got type %q", t)
	}
	return out, nil
}

type normalizer struct {
	strict bool
	defs   map[string]any
	refs   []string // $ref resolution stack (cycle detection)
	errs   []error
}

func (n *normalizer) fail(path, format string, args ...any) {
	n.errs = append(n.errs, fmt.Errorf("schema %s: %s", displayPath(path), fmt.Sprintf(format, args...)))
}

func displayPath(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

func join(path, elem string) string {
	if path == "" {
		return elem
	}
	return path + "." + elem
}

// node returns the normalized form of s (s may be modified; it is a copy).
func (n *normalizer) node(s map[string]any, path string, depth int) map[string]any {
	if depth > 64 {
		n.fail(path, "nesting deeper than 64 levels")
		return map[string]any{"type": "string"}
	}
	// refs resolved for this node stay on the stack while its children are
	// normalized, so a recursive $ref is reported instead of expanded forever.
	defer func(l int) { n.refs = n.refs[:l] }(len(n.refs))
	s = n.resolveRef(s, path)
	if s == nil {
		return map[string]any{"type": "string"}
	}
	s = n.mergeAllOf(s, path)
	s = n.collapseUnion(s, path)

	out := map[string]any{}
	typ := n.singleType(s, path)
	out["type"] = typ

	desc, _ := s["description"].(string)
	if desc == "" {
		desc, _ = s["title"].(string)
	}
	if hint := hints(s); hint != "" {
		desc = appendSentence(desc, hint+".")
	}

	// enum / const
	var enum []any
	if c, ok := s["const"]; ok {
		enum = []any{c}
	} else if e, ok := s["enum"].([]any); ok {
		enum = e
	}
	if enum != nil {
		var kept []any
		for _, v := range enum {
			if v == nil {
				continue
			}
			if !valueMatchesType(v, typ) {
				if n.strict {
					n.fail(path, "enum value %v does not match type %q", v, typ)
				}
				continue
			}
			kept = append(kept, v)
		}
		if len(kept) > 0 {
			out["enum"] = kept
		}
	}

	switch typ {
	case "object":
		n.object(s, out, path, depth, &desc)
	case "array":
		n.array(s, out, path, depth)
	}
	if desc != "" {
		out["description"] = desc
	}
	return out
}

func (n *normalizer) object(s, out map[string]any, path string, depth int, desc *string) {
	props, _ := s["properties"].(map[string]any)
	if ap, ok := s["additionalProperties"]; ok {
		if apm, isMap := ap.(map[string]any); (isMap && len(apm) > 0) || (ap == true && len(props) == 0) {
			if n.strict {
				n.fail(path, "free-form map (additionalProperties schema) is not supported in strict mode; declare the properties")
			}
		}
	}
	if _, ok := s["patternProperties"]; ok && n.strict && len(props) == 0 {
		n.fail(path, "patternProperties is not supported in strict mode; declare the properties")
	}
	required := map[string]bool{}
	var reqOrder []string
	if r, ok := s["required"].([]any); ok {
		for _, v := range r {
			if k, ok := v.(string); ok && !required[k] {
				required[k] = true
				reqOrder = append(reqOrder, k)
			}
		}
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	outProps := make(map[string]any, len(props))
	for _, k := range keys {
		child, ok := props[k].(map[string]any)
		if !ok {
			if b, isBool := props[k].(bool); isBool && b {
				child = map[string]any{}
			} else {
				n.fail(join(path, "properties."+k), "property schema must be an object")
				continue
			}
		}
		cn := n.node(child, join(path, "properties."+k), depth+1)
		if n.strict && !required[k] {
			// An optional string enum gets "" so the model can leave it unset.
			if e, ok := cn["enum"].([]any); ok && cn["type"] == "string" && !slices.Contains(e, any("")) {
				cn["enum"] = append(e, "")
			}
			d, _ := cn["description"].(string)
			cn["description"] = appendSentence(d, optionalHint(cn))
		}
		outProps[k] = cn
	}
	out["properties"] = outProps
	if n.strict {
		all := make([]any, 0, len(keys))
		for _, k := range keys {
			if _, ok := outProps[k]; ok {
				all = append(all, k)
			}
		}
		out["required"] = all
		out["additionalProperties"] = false
		return
	}
	var req []any
	for _, k := range reqOrder {
		if _, ok := outProps[k]; ok {
			req = append(req, k)
		}
	}
	if len(req) > 0 {
		out["required"] = req
	}
	switch ap := s["additionalProperties"].(type) {
	case bool:
		if !ap {
			out["additionalProperties"] = false
		}
	case map[string]any:
		if len(ap) > 0 {
			out["additionalProperties"] = n.node(ap, join(path, "additionalProperties"), depth+1)
		}
	}
}

// optionalHint tells the model how to leave an originally optional property
// unset now that strict mode makes it required: send the zero value (tools
// treat zero values as unset).
func optionalHint(node map[string]any) string {
	if _, isEnum := node["enum"]; isEnum && node["type"] != "string" {
		return "Optional."
	}
	switch node["type"] {
	case "string":
		return `Optional: "" means unset.`
	case "integer", "number":
		return "Optional: 0 means unset."
	case "boolean":
		return "Optional: false means unset."
	case "array":
		return "Optional: [] means unset."
	}
	return "Optional."
}

// appendSentence joins description text, adding a period when needed.
func appendSentence(desc, s string) string {
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return s
	}
	if !strings.ContainsAny(desc[len(desc)-1:], ".!?:") {
		desc += "."
	}
	return desc + " " + s
}

func (n *normalizer) array(s, out map[string]any, path string, depth int) {
	var items map[string]any
	switch it := s["items"].(type) {
	case map[string]any:
		items = it
	case []any: // tuple form
		if n.strict {
			n.fail(path, "tuple items (array form) are not supported in strict mode")
			return
		}
		if len(it) > 0 {
			items, _ = it[0].(map[string]any)
		}
	}
	if len(items) == 0 {
		if n.strict {
			n.fail(path, "array needs explicit items with a type")
			out["items"] = map[string]any{"type": "string"}
			return
		}
		items = map[string]any{"type": "string"}
	}
	out["items"] = n.node(items, join(path, "items"), depth+1)
}

// resolveRef inlines a local $ref, keeping sibling keywords (they win).
func (n *normalizer) resolveRef(s map[string]any, path string) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		if slices.Contains(n.refs, ref) {
			if !n.strict {
				// Cut the recursion: the server gets an untyped-body object.
				return map[string]any{"type": "object"}
			}
			n.fail(path, "recursive $ref %q cannot be inlined", ref)
			return nil
		}
		target, ok := n.defs[ref].(map[string]any)
		if !ok {
			n.fail(path, "unresolvable $ref %q (only local #/$defs and #/definitions are supported)", ref)
			return nil
		}
		n.refs = append(n.refs, ref)
		merged := deepCopy(target).(map[string]any)
		for k, v := range s {
			if k != "$ref" {
				merged[k] = v
			}
		}
		s = merged
	}
}

// mergeAllOf folds allOf branches into s (properties and required unioned).
func (n *normalizer) mergeAllOf(s map[string]any, path string) map[string]any {
	all, ok := s["allOf"].([]any)
	if !ok {
		return s
	}
	delete(s, "allOf")
	for i, b := range all {
		bm, ok := b.(map[string]any)
		if !ok {
			n.fail(path, "allOf[%d] must be an object", i)
			continue
		}
		bm = n.resolveRefCopy(bm, fmt.Sprintf("%s.allOf[%d]", path, i))
		bm = n.mergeAllOf(bm, path)
		for k, v := range bm {
			switch k {
			case "properties":
				pm, _ := s["properties"].(map[string]any)
				if pm == nil {
					pm = map[string]any{}
				}
				for pk, pv := range v.(map[string]any) {
					if _, exists := pm[pk]; !exists {
						pm[pk] = pv
					}
				}
				s["properties"] = pm
			case "required":
				r, _ := s["required"].([]any)
				rv, _ := v.([]any)
				s["required"] = append(r, rv...)
			case "type":
				if t, exists := s["type"]; exists && fmt.Sprint(t) != fmt.Sprint(v) {
					n.fail(path, "allOf branches have conflicting types %v and %v", t, v)
				} else {
					s["type"] = v
				}
			default:
				if _, exists := s[k]; !exists {
					s[k] = v
				}
			}
		}
	}
	return s
}

func (n *normalizer) resolveRefCopy(s map[string]any, path string) map[string]any {
	r := n.resolveRef(s, path)
	if r == nil {
		return map[string]any{}
	}
	return r
}

func isNullSchema(m map[string]any) bool {
	switch t := m["type"].(type) {
	case string:
		return t == "null"
	case []any:
		return len(t) == 1 && t[0] == "null"
	}
	if e, ok := m["enum"].([]any); ok && len(e) == 1 && e[0] == nil {
		return true
	}
	c, ok := m["const"]
	return ok && c == nil
}

// collapseUnion removes anyOf/oneOf: null branches are dropped; one remaining
// branch is merged into s; enum-only branches of one type become one enum.
func (n *normalizer) collapseUnion(s map[string]any, path string) map[string]any {
	for _, kw := range []string{"anyOf", "oneOf"} {
		raw, ok := s[kw].([]any)
		if !ok {
			continue
		}
		delete(s, kw)
		var branches []map[string]any
		for i, b := range raw {
			bm, ok := b.(map[string]any)
			if !ok {
				n.fail(path, "%s[%d] must be an object", kw, i)
				continue
			}
			bm = n.resolveRefCopy(bm, fmt.Sprintf("%s.%s[%d]", path, kw, i))
			if isNullSchema(bm) {
				continue
			}
			branches = append(branches, bm)
		}
		switch {
		case len(branches) == 0:
			n.fail(path, "%s has no non-null branch", kw)
		case len(branches) == 1:
			s = mergeInto(s, branches[0])
		default:
			if merged, ok := mergeEnumBranches(branches); ok {
				s = mergeInto(s, merged)
				continue
			}
			if n.strict {
				n.fail(path, "%s union of %d branches is not supported in strict mode; use one type (e.g. a string enum or separate properties)", kw, len(branches))
			}
			s = mergeInto(s, branches[0])
		}
	}
	return s
}

// mergeInto copies branch keywords into s where s does not set them.
func mergeInto(s, branch map[string]any) map[string]any {
	for k, v := range branch {
		if _, exists := s[k]; !exists {
			s[k] = v
		}
	}
	return s
}

// mergeEnumBranches turns [{const:a},{const:b}] / [{enum:[a]},{enum:[b,c]}]
// of one JSON type into {type, enum:[a,b,c]}.
func mergeEnumBranches(branches []map[string]any) (map[string]any, bool) {
	var vals []any
	typ := ""
	for _, b := range branches {
		var bv []any
		if c, ok := b["const"]; ok {
			bv = []any{c}
		} else if e, ok := b["enum"].([]any); ok {
			bv = e
		} else {
			return nil, false
		}
		for _, v := range bv {
			t := jsonType(v)
			if t == "integer" && typ == "number" {
				t = "number"
			}
			if typ == "" || (typ == "integer" && t == "number") {
				typ = t
			} else if t != typ {
				return nil, false
			}
			vals = append(vals, v)
		}
	}
	return map[string]any{"type": typ, "enum": vals}, typ != ""
}

// singleType returns the one JSON type of node s.
func (n *normalizer) singleType(s map[string]any, path string) string {
	var cands []string
	switch t := s["type"].(type) {
	case string:
		cands = []string{t}
	case []any:
		for _, v := range t {
			if str, ok := v.(string); ok {
				cands = append(cands, str)
			}
		}
	}
	var nonNull []string
	for _, c := range cands {
		if c != "null" {
			nonNull = append(nonNull, c)
		}
	}
	switch {
	case len(nonNull) == 1:
		return n.checkType(nonNull[0], path)
	case len(nonNull) > 1:
		if n.strict {
			n.fail(path, "type %v has several non-null types; strict mode needs one", nonNull)
		}
		return n.checkType(nonNull[0], path)
	case len(cands) > 0: // only "null"
		n.fail(path, `type "null" alone is not supported`)
		return "string"
	}
	// infer
	switch {
	case hasAny(s, "properties", "additionalProperties", "required", "patternProperties"):
		return "object"
	case hasAny(s, "items", "minItems", "maxItems"):
		return "array"
	}
	var enum []any
	if c, ok := s["const"]; ok {
		enum = []any{c}
	} else if e, ok := s["enum"].([]any); ok {
		enum = e
	}
	typ := ""
	for _, v := range enum {
		if v == nil {
			continue
		}
		t := jsonType(v)
		if typ == "" || (typ == "integer" && t == "number") {
			typ = t
		} else if t != typ && !(typ == "number" && t == "integer") {
			typ = "mixed"
		}
	}
	if typ != "" && typ != "mixed" {
		return typ
	}
	if n.strict {
		n.fail(path, "missing type (cannot infer one)")
	}
	return "string"
}

func (n *normalizer) checkType(t, path string) string {
	if t == "object" || t == "array" || slices.Contains(scalarTypes, t) {
		return t
	}
	n.fail(path, "unknown type %q", t)
	return "string"
}

func hasAny(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func hints(s map[string]any) string {
	var parts []string
	for _, k := range hintKeywords {
		v, ok := s[k]
		if !ok {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		parts = append(parts, k+": "+string(b))
	}
	return strings.Join(parts, "; ")
}

func jsonType(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case int, int32, int64, uint, uint32, uint64:
		return "integer"
	case float32:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case nil:
		return "null"
	}
	return "unknown"
}

func valueMatchesType(v any, typ string) bool {
	jt := jsonType(v)
	return jt == typ || (typ == "number" && jt == "integer")
}

// jsonCopy deep-copies schema through JSON so Go-typed values ([]string,
// int, nested typed maps) become plain JSON values.
func jsonCopy(schema map[string]any) (map[string]any, error) {
	if schema == nil {
		return map[string]any{}, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: not JSON-encodable: %w", err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, nil
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, vv := range x {
			m[k] = deepCopy(vv)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, vv := range x {
			s[i] = deepCopy(vv)
		}
		return s
	case []string:
		s := make([]any, len(x))
		for i, vv := range x {
			s[i] = vv
		}
		return s
	case []map[string]any:
		s := make([]any, len(x))
		for i, vv := range x {
			s[i] = deepCopy(vv)
		}
		return s
	}
	return v
}

// strictKeywords is the complete set of keywords a strict-normalized node may carry.
var strictKeywords = []string{"type", "description", "enum", "properties", "required", "additionalProperties", "items"}

// ValidateStrict reports every way schema breaks the strict rules that
// NormalizeStrict establishes (and OpenAI strict mode enforces): top level is
// an object; each node has exactly one type among object, array, string,
// number, integer, boolean; objects have properties, additionalProperties
// false and required listing exactly all properties; arrays have typed items;
// no $ref/$defs/anyOf/oneOf/allOf/not/nullable/const or other keywords;
// enums are non-empty and match the type; nesting depth, total properties and
// enum sizes stay within the API limits. Errors name the path.
func ValidateStrict(schema map[string]any) error {
	v := &strictValidator{}
	if schema == nil {
		return errors.New("schema (root): nil schema")
	}
	schema, err := jsonCopy(schema)
	if err != nil {
		return err
	}
	if t, _ := schema["type"].(string); t != "object" {
		v.fail("", `top level must have "type": "object"`)
	}
	v.node(schema, "", 1)
	if v.props > StrictMaxProperties {
		v.fail("", fmt.Sprintf("%d properties in total, limit %d", v.props, StrictMaxProperties))
	}
	return errors.Join(v.errs...)
}

type strictValidator struct {
	errs  []error
	props int
}

func (v *strictValidator) fail(path, msg string) {
	v.errs = append(v.errs, fmt.Errorf("schema %s: %s", displayPath(path), msg))
}

func (v *strictValidator) node(s map[string]any, path string, depth int) {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(strictKeywords, k) {
			v.fail(path, fmt.Sprintf("keyword %q is not allowed in strict mode", k))
		}
	}
	typ, ok := s["type"].(string)
	if !ok {
		if _, isArr := s["type"].([]any); isArr {
			v.fail(path, "type must be a single string, not a type array")
		} else {
			v.fail(path, "missing type")
		}
		return
	}
	if d, ok := s["description"]; ok {
		if _, isStr := d.(string); !isStr {
			v.fail(path, "description must be a string")
		}
	}
	if e, ok := s["enum"]; ok {
		vals, isArr := e.([]any)
		switch {
		case !isArr || len(vals) == 0:
			v.fail(path, "enum must be a non-empty array")
		case len(vals) > StrictMaxEnumValues:
			v.fail(path, fmt.Sprintf("enum has %d values, limit %d", len(vals), StrictMaxEnumValues))
		default:
			for _, x := range vals {
				if !valueMatchesType(x, typ) {
					v.fail(path, fmt.Sprintf("enum value %v does not match type %q", x, typ))
				}
			}
		}
	}
	switch typ {
	case "object":
		if depth > StrictMaxDepth {
			v.fail(path, fmt.Sprintf("object nesting depth %d exceeds %d", depth, StrictMaxDepth))
		}
		props, ok := s["properties"].(map[string]any)
		if !ok {
			v.fail(path, "object must have a properties map")
		}
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			v.fail(path, "object must have additionalProperties: false")
		}
		req, ok := toStrings(s["required"])
		if !ok {
			v.fail(path, "object must have required listing every property")
		}
		seen := map[string]bool{}
		for _, r := range req {
			if seen[r] {
				v.fail(path, fmt.Sprintf("required lists %q twice", r))
			}
			seen[r] = true
			if _, ok := props[r]; !ok {
				v.fail(path, fmt.Sprintf("required names %q which is not a property", r))
			}
		}
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			v.props++
			if !seen[k] {
				v.fail(path, fmt.Sprintf("property %q is not in required (strict mode needs every property required)", k))
			}
			child, ok := props[k].(map[string]any)
			if !ok {
				v.fail(join(path, "properties."+k), "property schema must be an object")
				continue
			}
			v.node(child, join(path, "properties."+k), depth+1)
		}
	case "array":
		items, ok := s["items"].(map[string]any)
		if !ok || len(items) == 0 {
			v.fail(path, "array must have explicit items with a type")
			return
		}
		v.node(items, join(path, "items"), depth)
	case "string", "number", "integer", "boolean":
		for _, k := range []string{"properties", "required", "additionalProperties", "items"} {
			if _, ok := s[k]; ok {
				v.fail(path, fmt.Sprintf("keyword %q does not apply to type %q", k, typ))
			}
		}
	default:
		v.fail(path, fmt.Sprintf("type %q is not allowed (one of object, array, string, number, integer, boolean)", typ))
	}
}

func toStrings(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}
