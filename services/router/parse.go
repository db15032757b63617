package router

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/types/known/structpb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
)

// InputError is a request the router cannot route; it becomes InvalidArgument.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// Call is a routed tool call: a tool and its typed parameters (string,
// float64 or bool values).
type Call struct {
	Tool   *evidencev1.ToolDefinition
	Params map[string]any
	// Filled lists the parameters taken from the context.
	Filled []string
}

// token is one word of a slash command: key=value or a bare value.
type token struct {
	key    string
	val    string
	hasKey bool
	quoted bool
}

// tokenize splits a command line into tokens. Quotes (single or double) group
// words; they are removed when they open a token or a value (key="a b"), and
// kept literally inside a word (a PromQL matcher like {code="500"}).
func tokenize(s string) ([]token, error) {
	rs := []rune(s)
	var out []token
	i := 0
	for {
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
		if i >= len(rs) {
			return out, nil
		}
		var tk token
		start := i
		j := i
		if j+1 < len(rs) && rs[j] == '-' && rs[j+1] == '-' {
			j += 2
		}
		k := j
		for k < len(rs) && isIdentRune(rs[k], k == j) {
			k++
		}
		if k > j && k < len(rs) && rs[k] == '=' && (k+1 >= len(rs) || (rs[k+1] != '=' && rs[k+1] != '~')) {
			tk.key, tk.hasKey = string(rs[j:k]), true
			i = k + 1
		} else if k > j && j > start && (k >= len(rs) || unicode.IsSpace(rs[k])) {
			// --flag
			tk.key, tk.hasKey, tk.val = string(rs[j:k]), true, "true"
			out = append(out, tk)
			i = k
			continue
		}
		val, next, quoted, err := readValue(rs, i)
		if err != nil {
			return nil, err
		}
		tk.val, tk.quoted = val, quoted
		out = append(out, tk)
		i = next
	}
}

func isIdentRune(r rune, first bool) bool {
	if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
		return true
	}
	return !first && ((r >= '0' && r <= '9') || r == '-' || r == '.')
}

// readValue reads one value from rs[i:], stripping an opening quote pair.
func readValue(rs []rune, i int) (string, int, bool, error) {
	var b strings.Builder
	quoted := false
	if i < len(rs) && (rs[i] == '"' || rs[i] == '\'') {
		q := rs[i]
		quoted = true
		j := i + 1
		closed := false
		for j < len(rs) {
			r := rs[j]
			if r == '\\' && q == '"' && j+1 < len(rs) && (rs[j+1] == '"' || rs[j+1] == '\\') {
				b.WriteRune(rs[j+1])
				j += 2
				continue
			}
			if r == q {
				closed = true
				j++
				break
			}
			b.WriteRune(r)
			j++
		}
		if !closed {
			return "", 0, false, inputErrf("unterminated %c quote in %q", q, string(rs[i:]))
		}
		i = j
	}
	for i < len(rs) && !unicode.IsSpace(rs[i]) {
		r := rs[i]
		if r == '"' || r == '\'' {
			// A quote inside a word is literal but still groups spaces.
			j := i + 1
			for j < len(rs) && rs[j] != r {
				j++
			}
			if j >= len(rs) {
				return "", 0, false, inputErrf("unterminated %c quote in %q", r, string(rs[i:]))
			}
			b.WriteString(string(rs[i : j+1]))
			i = j + 1
			continue
		}
		b.WriteRune(r)
		i++
	}
	return b.String(), i, quoted, nil
}

// paramAliases are short names accepted for common parameters.
var paramAliases = map[string][]string{
	"ns":       {"namespace"},
	"n":        {"namespace"},
	"tail":     {"tail_lines", "tail"},
	"lines":    {"tail_lines"},
	"since":    {"since_minutes", "range_minutes"},
	"range":    {"range_minutes", "since_minutes"},
	"minutes":  {"since_minutes", "range_minutes"},
	"q":        {"query"},
	"svc":      {"service"},
	"c":        {"container"},
	"prev":     {"previous"},
	"selector": {"label_selector"},
	"l":        {"label_selector"},
	"object":   {"involved_object"},
	"type":     {"kind", "type"},
	"db":       {"instance", "db_instance", "db_instance_identifier"},
	"instance": {"instance", "db_instance", "db_instance_identifier"},
	"sha":      {"sha", "commit"},
	"commit":   {"sha", "commit"},
	"resource": {"name"},
	"name":     {"name"},
	"podname":  {"pod"},
	"level":    {"level"},
	"index":    {"index"},
}

// resolveParam maps a user-written key to a parameter of the tool.
func resolveParam(t *evidencev1.ToolDefinition, key string) *evidencev1.ToolParam {
	k := strings.ToLower(strings.ReplaceAll(key, "-", "_"))
	if p := findParam(t, k); p != nil {
		return p
	}
	for _, alias := range paramAliases[k] {
		if p := findParam(t, alias); p != nil {
			return p
		}
	}
	return nil
}

// ParseCommand parses a slash command against the registry into a call
// (parameters typed and validated; context not yet applied).
func ParseCommand(reg *Registry, line string) (*Call, error) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "/") {
		return nil, inputErrf("a command starts with \"/\" (available: %s)", strings.Join(reg.Commands(), ", "))
	}
	cmdEnd := strings.IndexFunc(line, unicode.IsSpace)
	cmd, rest := line, ""
	if cmdEnd >= 0 {
		cmd, rest = line[:cmdEnd], line[cmdEnd:]
	}
	if cmd == "/" {
		return nil, inputErrf("empty command; available commands: %s", strings.Join(reg.Commands(), ", "))
	}
	tool, ok := reg.Command(cmd)
	if !ok {
		msg := fmt.Sprintf("unknown command %q", cmd)
		if near := reg.closeCommands(cmd); len(near) > 0 {
			msg += fmt.Sprintf("; did you mean %s?", strings.Join(near, " or "))
		}
		return nil, inputErrf("%s (available commands: %s)", msg, strings.Join(reg.Commands(), ", "))
	}
	toks, err := tokenize(rest)
	if err != nil {
		return nil, err
	}
	params := map[string]any{}
	var positional []token
	for _, tk := range toks {
		if !tk.hasKey {
			if p := findParam(tool, tk.val); p != nil && p.GetType() == evidencev1.ParamType_PARAM_TYPE_BOOLEAN && !tk.quoted {
				if _, dup := params[p.GetName()]; dup {
					return nil, inputErrf("parameter %q given twice", p.GetName())
				}
				params[p.GetName()] = true
				continue
			}
			positional = append(positional, tk)
			continue
		}
		p := resolveParam(tool, tk.key)
		if p == nil {
			return nil, inputErrf("unknown parameter %q for %s; its parameters are: %s",
				tk.key, slashOf(tool), describeParams(tool))
		}
		if _, dup := params[p.GetName()]; dup {
			return nil, inputErrf("parameter %q given twice", p.GetName())
		}
		v, err := coerce(tool, p, tk.val)
		if err != nil {
			return nil, err
		}
		params[p.GetName()] = v
	}
	if len(positional) > 0 {
		if err := assignPositional(tool, params, positional); err != nil {
			return nil, err
		}
	}
	return &Call{Tool: tool, Params: params}, nil
}

// assignPositional gives bare arguments to required parameters: all of them
// joined to the only required parameter, or one each in schema order.
func assignPositional(tool *evidencev1.ToolDefinition, params map[string]any, pos []token) error {
	var req, noDefault []*evidencev1.ToolParam
	for _, p := range tool.GetParamsSchema() {
		if !p.GetRequired() {
			continue
		}
		if _, set := params[p.GetName()]; set {
			continue
		}
		req = append(req, p)
		if p.GetDefaultFromContext() == "" {
			noDefault = append(noDefault, p)
		}
	}
	vals := make([]string, len(pos))
	for i, t := range pos {
		vals[i] = t.val
	}
	unexpected := func() error {
		return inputErrf("unexpected argument %q for %s: write name=value (parameters: %s)",
			strings.Join(vals, " "), slashOf(tool), describeParams(tool))
	}
	assign := func(targets []*evidencev1.ToolParam) error {
		for i, p := range targets {
			v, err := coerce(tool, p, vals[i])
			if err != nil {
				return err
			}
			params[p.GetName()] = v
		}
		return nil
	}
	switch {
	case len(req) == 0:
		return unexpected()
	case len(req) == 1:
		p := req[0]
		if len(vals) > 1 && !isTextParam(p) {
			return unexpected()
		}
		v, err := coerce(tool, p, strings.Join(vals, " "))
		if err != nil {
			return err
		}
		params[p.GetName()] = v
		return nil
	case len(vals) == len(noDefault):
		return assign(noDefault)
	case len(vals) == len(req):
		return assign(req)
	case len(vals) == 1 && len(noDefault) == 0:
		// All required parameters have context defaults: the argument names
		// the most specific one (pod over service over namespace).
		best := req[0]
		for _, p := range req[1:] {
			if specificity(p.GetDefaultFromContext()) > specificity(best.GetDefaultFromContext()) {
				best = p
			}
		}
		return assign([]*evidencev1.ToolParam{best})
	case len(noDefault) == 1 && len(vals) > 1 && isTextParam(noDefault[0]):
		v, err := coerce(tool, noDefault[0], strings.Join(vals, " "))
		if err != nil {
			return err
		}
		params[noDefault[0].GetName()] = v
		return nil
	}
	return unexpected()
}

func specificity(ctxField string) int {
	switch normalizeCtxField(ctxField) {
	case "active_pod":
		return 3
	case "active_service":
		return 2
	case "active_namespace":
		return 1
	}
	return 0
}

func isTextParam(p *evidencev1.ToolParam) bool {
	return p.GetType() == evidencev1.ParamType_PARAM_TYPE_STRING || p.GetType() == evidencev1.ParamType_PARAM_TYPE_UNSPECIFIED
}

func describeParams(t *evidencev1.ToolDefinition) string {
	if len(t.GetParamsSchema()) == 0 {
		return "(none)"
	}
	parts := make([]string, 0, len(t.GetParamsSchema()))
	for _, p := range t.GetParamsSchema() {
		s := p.GetName() + " (" + typeName(p.GetType())
		if p.GetRequired() {
			s += ", required"
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, ", ")
}

func typeName(t evidencev1.ParamType) string {
	switch t {
	case evidencev1.ParamType_PARAM_TYPE_SELECT:
		return "select"
	case evidencev1.ParamType_PARAM_TYPE_NUMBER:
		return "number"
	case evidencev1.ParamType_PARAM_TYPE_BOOLEAN:
		return "boolean"
	default:
		return "string"
	}
}

// strictOptions says whether a select's options constrain its value. Options
// of a context-backed parameter (pods, namespaces) are suggestions filled from
// the session: wildcards and names the session has not seen stay valid.
func strictOptions(p *evidencev1.ToolParam) bool {
	return len(p.GetOptions()) > 0 && p.GetDefaultFromContext() == ""
}

// coerce converts a value (command text or JSON value) to the parameter type.
func coerce(tool *evidencev1.ToolDefinition, p *evidencev1.ToolParam, v any) (any, error) {
	name := p.GetName()
	switch v.(type) {
	case nil:
		return nil, inputErrf("parameter %q of %s is null", name, tool.GetIntent())
	case []any, map[string]any:
		return nil, inputErrf("parameter %q of %s expects a %s, got a %s", name, tool.GetIntent(), typeName(p.GetType()), jsonKind(v))
	}
	switch p.GetType() {
	case evidencev1.ParamType_PARAM_TYPE_NUMBER:
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, inputErrf("parameter %q of %s expects a finite number", name, tool.GetIntent())
			}
			return x, nil
		case int:
			return float64(x), nil
		case bool:
			return nil, inputErrf("parameter %q of %s expects a number, got boolean %v", name, tool.GetIntent(), x)
		case string:
			s := strings.TrimSpace(x)
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f, nil
			}
			if d, err := time.ParseDuration(s); err == nil {
				switch {
				case strings.HasSuffix(name, "_minutes"):
					return d.Minutes(), nil
				case strings.HasSuffix(name, "_seconds"):
					return d.Seconds(), nil
				case strings.HasSuffix(name, "_hours"):
					return d.Hours(), nil
				}
			}
			return nil, inputErrf("parameter %q of %s expects a number, got %q", name, tool.GetIntent(), x)
		}
	case evidencev1.ParamType_PARAM_TYPE_BOOLEAN:
		switch x := v.(type) {
		case bool:
			return x, nil
		case float64:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
			return nil, inputErrf("parameter %q of %s expects a boolean (true/false/yes/no), got %v", name, tool.GetIntent(), x)
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "yes", "y", "on", "1":
				return true, nil
			case "false", "no", "n", "off", "0":
				return false, nil
			}
			return nil, inputErrf("parameter %q of %s expects a boolean (true/false/yes/no), got %q", name, tool.GetIntent(), x)
		}
	default: // string, select
		var s string
		switch x := v.(type) {
		case string:
			s = strings.TrimSpace(x)
		case float64:
			s = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			return nil, inputErrf("parameter %q of %s expects a %s, got boolean %v", name, tool.GetIntent(), typeName(p.GetType()), x)
		default:
			s = fmt.Sprint(x)
		}
		if s == "" {
			return nil, inputErrf("parameter %q of %s is empty", name, tool.GetIntent())
		}
		if p.GetType() == evidencev1.ParamType_PARAM_TYPE_SELECT && strictOptions(p) {
			for _, o := range p.GetOptions() {
				if strings.EqualFold(o, s) {
					return o, nil
				}
			}
			return nil, inputErrf("invalid value %q for parameter %q of %s: expected one of %s",
				s, name, tool.GetIntent(), strings.Join(p.GetOptions(), ", "))
		}
		return s, nil
	}
	return nil, inputErrf("parameter %q of %s has an unsupported value %v", name, tool.GetIntent(), v)
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// ValidateParams checks JSON parameters (a quick action or a model's output)
// against the tool schema and types them.
func ValidateParams(tool *evidencev1.ToolDefinition, in map[string]any) (*Call, error) {
	params := make(map[string]any, len(in))
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := resolveParam(tool, k)
		if p == nil {
			return nil, inputErrf("unknown parameter %q for %s; its parameters are: %s", k, tool.GetIntent(), describeParams(tool))
		}
		if _, dup := params[p.GetName()]; dup {
			return nil, inputErrf("parameter %q given twice", p.GetName())
		}
		v, err := coerce(tool, p, in[k])
		if err != nil {
			return nil, err
		}
		params[p.GetName()] = v
	}
	return &Call{Tool: tool, Params: params}, nil
}

// normalizeCtxField maps short names to RouterContext field names.
func normalizeCtxField(f string) string {
	f = strings.ToLower(strings.TrimSpace(f))
	switch f {
	case "namespace", "ns":
		return "active_namespace"
	case "service":
		return "active_service"
	case "pod":
		return "active_pod"
	}
	return f
}

// contextValue reads a RouterContext field (or extra key) by name.
func contextValue(rc *evidencev1.RouterContext, field string) (string, bool) {
	if rc == nil {
		return "", false
	}
	single := func(xs []string) (string, bool) {
		if len(xs) == 1 && strings.TrimSpace(xs[0]) != "" {
			return xs[0], true
		}
		return "", false
	}
	f := normalizeCtxField(field)
	switch f {
	case "active_namespace":
		if rc.GetActiveNamespace() != "" {
			return rc.GetActiveNamespace(), true
		}
		return single(rc.GetDiscoveredNamespaces())
	case "active_service":
		if rc.GetActiveService() != "" {
			return rc.GetActiveService(), true
		}
		return single(rc.GetDiscoveredServices())
	case "active_pod":
		return rc.GetActivePod(), rc.GetActivePod() != ""
	case "session_id":
		return rc.GetSessionId(), rc.GetSessionId() != ""
	case "incident_id":
		return rc.GetIncidentId(), rc.GetIncidentId() != ""
	case "last_agent_phase":
		return rc.GetLastAgentPhase(), rc.GetLastAgentPhase() != ""
	case "time_window":
		tw := rc.GetTimeWindow()
		if tw == nil || tw.GetStart() == nil || tw.GetEnd() == nil {
			return "", false
		}
		return tw.GetStart().AsTime().UTC().Format(time.RFC3339) + "/" + tw.GetEnd().AsTime().UTC().Format(time.RFC3339), true
	}
	if v, ok := rc.GetExtra()[field]; ok && v != "" {
		return v, true
	}
	if v, ok := rc.GetExtra()[f]; ok && v != "" {
		return v, true
	}
	return "", false
}

// contextLabel says what a context field is, for error messages.
func contextLabel(field string) string {
	switch normalizeCtxField(field) {
	case "active_namespace":
		return "active namespace"
	case "active_service":
		return "active service"
	case "active_pod":
		return "active pod"
	case "time_window":
		return "time window"
	}
	return field
}

// MissingParam is a required parameter neither the request nor the context set.
type MissingParam struct {
	Name         string
	ContextField string
}

// FillFromContext sets missing parameters that have a default_from_context,
// recording them in call.Filled, and returns required parameters still missing.
func FillFromContext(call *Call, rc *evidencev1.RouterContext) ([]MissingParam, error) {
	var missing []MissingParam
	for _, p := range call.Tool.GetParamsSchema() {
		if _, set := call.Params[p.GetName()]; set {
			continue
		}
		if f := p.GetDefaultFromContext(); f != "" {
			if raw, ok := contextValue(rc, f); ok {
				v, err := coerce(call.Tool, p, raw)
				if err != nil {
					return nil, inputErrf("context %s: %v", f, err)
				}
				call.Params[p.GetName()] = v
				call.Filled = append(call.Filled, p.GetName())
				continue
			}
		}
		if p.GetRequired() {
			missing = append(missing, MissingParam{Name: p.GetName(), ContextField: p.GetDefaultFromContext()})
		}
	}
	return missing, nil
}

// missingMessage explains which parameters and context are missing.
func missingMessage(tool *evidencev1.ToolDefinition, missing []MissingParam) string {
	parts := make([]string, 0, len(missing))
	for _, m := range missing {
		if m.ContextField != "" {
			parts = append(parts, fmt.Sprintf("%s (not given, and the context has no %s [%s])", m.Name, contextLabel(m.ContextField), normalizeCtxField(m.ContextField)))
		} else {
			parts = append(parts, fmt.Sprintf("%s (not given)", m.Name))
		}
	}
	return fmt.Sprintf("%s needs required parameter(s): %s; pass them as name=value, e.g. %s",
		tool.GetIntent(), strings.Join(parts, "; "), usageOf(tool))
}

func usageOf(t *evidencev1.ToolDefinition) string {
	if u := t.GetUsage(); u != "" {
		return u
	}
	var b strings.Builder
	b.WriteString(slashOf(t))
	for _, p := range t.GetParamsSchema() {
		if p.GetRequired() {
			fmt.Fprintf(&b, " %s=<%s>", p.GetName(), p.GetName())
		}
	}
	return b.String()
}

// CommandString renders a call as a slash command, in schema order.
func CommandString(c *Call) string {
	var b strings.Builder
	b.WriteString(slashOf(c.Tool))
	seen := map[string]bool{}
	write := func(k string, v any) {
		seen[k] = true
		b.WriteByte(' ')
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(quoteIfNeeded(formatValue(v)))
	}
	for _, p := range c.Tool.GetParamsSchema() {
		if v, ok := c.Params[p.GetName()]; ok {
			write(p.GetName(), v)
		}
	}
	var rest []string
	for k := range c.Params {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		write(k, c.Params[k])
	}
	return b.String()
}

func formatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// quoteIfNeeded double-quotes a value that would not read back as one token:
// empty, holding white space of any kind (a newline, a no-break space) or a
// quote, or starting with '=' or '~' (name==x and name=~x read as a PromQL
// comparison, not as name=value).
func quoteIfNeeded(s string) string {
	if s == "" || strings.ContainsAny(s, "\"'") || strings.IndexFunc(s, unicode.IsSpace) >= 0 ||
		strings.HasPrefix(s, "=") || strings.HasPrefix(s, "~") {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
	}
	return s
}

// paramsStruct converts typed params to a protobuf Struct.
func paramsStruct(params map[string]any) (*structpb.Struct, error) {
	s, err := structpb.NewStruct(params)
	if err != nil {
		return nil, fmt.Errorf("router: params to struct: %w", err)
	}
	return s, nil
}
