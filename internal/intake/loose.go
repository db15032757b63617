package intake

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// An envelope no table knows still says what fired in fields of its own
// naming: a VictorOps alert's entity_display_name and state_message, a
// check's service_output, an incident's INCIDENT_NAME. These are read by
// the shape of their names, after every known name: a name or title, then
// a message, summary, output or description.

var (
	// reNameField: a field that names the alert (not the host, the user or
	// the team it concerns).
	// A Nagios-family check (Nagios, Icinga, Checkmk, Naemon) is named by
	// its service description (SERVICEDESC, service_description).
	reNameField    = regexp.MustCompile(`(?i)(title|subject|headline|display_?name|(alert|alarm|rule|check|monitor|incident|problem|event|trigger|issue|condition|policy|detector)_?name|alert_?rule|service_?desc(ription)?)$`)
	reNotNameField = regexp.MustCompile(`(?i)(host|user|owner|author|team|project|org|account|contact|assignee|tool|node|pod|namespace|cluster|service|container|image|file|group|policy|region|zone)_?(display_?)?name$`)
	// reTextField: a field that says what happened.
	reTextField = regexp.MustCompile(`(?i)(message|summary|output|description|details?|text|reason|body|markdown|content)$`)
)

// reNamingObject: an object whose plain name field names the alert (a
// check's, monitor's or rule's own name, kept in its metadata or not).
var reNamingObject = regexp.MustCompile(`(?i)^(alert|rule|check|monitor|incident|problem|trigger|issue|alarm|condition)s?$`)

// reNamingPrefix: an object named for the alert in a compound name
// ("alarmPolicyInfo", "alert_rule_info"); the word before the capital or
// the underscore is the naming object.
var reNamingPrefix = regexp.MustCompile(`^(alert|alarm|rule|monitor|check|incident|trigger)s?(?:[A-Z]|_[a-z])`)

// rePolicyName: the name of the rule or policy an alert fired by, inside
// an object that names the alert (elsewhere a policy is who gets paged).
var rePolicyName = regexp.MustCompile(`(?i)^(policy|rule)_?name$`)

// looseDepth is how deep looseFields reads nested objects; looseListItems
// how many objects of a list it reads (a payload's events or records).
const (
	looseDepth     = 3
	looseListItems = 4
)

// looseFields are the string fields of obj and of the objects nested in it
// (looseDepth levels, the first objects of lists included), keyed by their
// own names, the outer first. A plain "name"
// (or "title") inside an object that names the alert (a check, a monitor,
// a rule, directly or in its metadata) is keyed "<object>_name": it names
// the alert, not the host or entity beside it.
func looseFields(obj map[string]any) [][2]string {
	var out [][2]string
	var walk func(m map[string]any, depth int, naming string)
	walk = func(m map[string]any, depth int, naming string) {
		keys := slices.Sorted(maps.Keys(m))
		for _, k := range keys {
			if s := str(m[k]); s != "" {
				key := k
				if naming != "" && (strings.EqualFold(k, "name") || strings.EqualFold(k, "title") || rePolicyName.MatchString(k)) {
					key = naming + "_name"
				}
				out = append(out, [2]string{key, s})
			}
		}
		if depth >= looseDepth {
			return
		}
		for _, k := range keys {
			var subs []map[string]any
			switch v := m[k].(type) {
			case map[string]any:
				subs = []map[string]any{v}
			case []any:
				for _, e := range v {
					if sub, ok := e.(map[string]any); ok && len(subs) < looseListItems {
						subs = append(subs, sub)
					}
				}
			}
			next := ""
			switch {
			case reNamingObject.MatchString(k):
				next = strings.ToLower(strings.TrimSuffix(k, "s"))
			case reNamingPrefix.MatchString(k):
				next = reNamingPrefix.FindStringSubmatch(k)[1]
			case naming != "" && strings.EqualFold(k, "metadata"):
				next = naming
			}
			for _, sub := range subs {
				walk(sub, depth+1, next)
			}
		}
	}
	walk(obj, 0, "")
	return out
}

// looseName is the first field that names the alert; looseText the first
// that says what happened.
func looseName(fields [][2]string) string {
	for _, f := range fields {
		if reNameField.MatchString(f[0]) && !reNotNameField.MatchString(f[0]) && !strings.Contains(f[1], "://") {
			return f[1]
		}
	}
	return ""
}

func looseText(fields [][2]string) string {
	for _, f := range fields {
		if reTextField.MatchString(f[0]) && !strings.Contains(f[1], "://") {
			return f[1]
		}
	}
	return ""
}

// looseAlert reads an envelope of nested objects (an alert and an incident
// side by side) whose names are none of the generic keys: it is the
// generic alert of its first named field, with every string field of the
// nested objects as an annotation. ok is false when nothing names it.
func looseAlert(obj map[string]any) (map[string]any, bool) {
	fields := looseFields(obj)
	name := looseName(fields)
	text := looseText(fields)
	if name == "" && text == "" {
		return nil, false
	}
	out := map[string]any{}
	for k, v := range obj {
		if _, nested := v.(map[string]any); !nested {
			out[k] = v
		}
	}
	ann := map[string]any{}
	for _, f := range fields {
		if _, ok := ann[f[0]]; !ok && len(ann) < 64 {
			ann[f[0]] = truncate(f[1], 500)
		}
	}
	out["annotations"] = ann
	if name != "" {
		out["title"] = name
	}
	if text != "" {
		out["summary"] = text
	}
	for _, f := range fields {
		k := strings.ToLower(f[0])
		for _, want := range []string{"severity", "status", "state", "namespace", "service", "cluster", "host", "hostname"} {
			if _, ok := out[want]; !ok && (k == want || strings.HasSuffix(k, "_"+want) && want != "status" && want != "state") {
				out[want] = f[1]
			}
		}
	}
	return out, true
}
