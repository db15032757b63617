package tools

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	evidencev1 "github.com/rcamesh/rcamesh/gen/rcamesh/evidence/v1"
	"github.com/rcamesh/rcamesh/internal/mesh"
)

// Params are a call's validated parameters: strings for string/select,
// float64 for numbers, bool for booleans. Absent parameters are not present.
type Params map[string]any

// String returns a string parameter or "".
func (p Params) String(name string) string {
	s, _ := p[name].(string)
	return s
}

// Has reports whether the call set name.
func (p Params) Has(name string) bool { _, ok := p[name]; return ok }

// Int returns a number parameter as int64 (saturating: a value beyond the
// int64 range is its bound), or def when absent.
func (p Params) Int(name string, def int64) int64 {
	if f, ok := p[name].(float64); ok {
		switch {
		case f >= math.MaxInt64:
			return math.MaxInt64
		case f <= math.MinInt64:
			return math.MinInt64
		}
		return int64(f)
	}
	return def
}

// Float returns a number parameter, or def when absent.
func (p Params) Float(name string, def float64) float64 {
	if f, ok := p[name].(float64); ok {
		return f
	}
	return def
}

// Bool returns a boolean parameter and whether it was set.
func (p Params) Bool(name string) (value, set bool) {
	b, ok := p[name].(bool)
	return b, ok
}

// Canonical is the parameters as JSON with sorted keys: the identity of a call.
func (p Params) Canonical() string {
	b, err := json.Marshal(map[string]any(p))
	if err != nil {
		return fmt.Sprint(map[string]any(p))
	}
	return string(b)
}

// Struct returns the parameters as a protobuf Struct.
func (p Params) Struct() *structpb.Struct {
	s, err := structpb.NewStruct(map[string]any(p))
	if err != nil {
		return &structpb.Struct{}
	}
	return s
}

// ParamError names the parameter a call got wrong.
type ParamError struct {
	Intent string
	Param  string
	Reason string
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("tool %s: parameter %q: %s", e.Intent, e.Param, e.Reason)
}

// validateParams checks raw against the tool's schema, fills defaults from
// the context and returns typed parameters. Unknown parameters, wrong types,
// values outside a select's options and missing required parameters are
// errors naming the parameter.
func validateParams(def *evidencev1.ToolDefinition, raw *structpb.Struct, rc *evidencev1.RouterContext) (Params, error) {
	intent := def.GetIntent()
	schema := map[string]*evidencev1.ToolParam{}
	for _, p := range def.GetParamsSchema() {
		schema[p.GetName()] = p
	}
	out := Params{}
	for name, v := range raw.GetFields() {
		p, ok := schema[name]
		if !ok {
			return nil, &ParamError{intent, name, "unknown parameter (accepted: " + strings.Join(paramNames(def), ", ") + ")"}
		}
		if _, isNull := v.GetKind().(*structpb.Value_NullValue); isNull {
			continue
		}
		val, err := coerce(p, v)
		if err != nil {
			return nil, &ParamError{intent, name, err.Error()}
		}
		if s, ok := val.(string); ok && strings.TrimSpace(s) == "" {
			continue // an empty string is "not set": context defaults may fill it
		}
		out[name] = val
	}
	for _, p := range def.GetParamsSchema() {
		if _, ok := out[p.GetName()]; ok {
			continue
		}
		if v := mesh.ContextValue(rc, p.GetDefaultFromContext()); v != "" {
			val, err := coerce(p, structpb.NewStringValue(v))
			if err != nil {
				return nil, &ParamError{intent, p.GetName(), fmt.Sprintf("context default %s: %v", p.GetDefaultFromContext(), err)}
			}
			out[p.GetName()] = val
			continue
		}
		if p.GetRequired() {
			reason := "required"
			if p.GetDefaultFromContext() != "" {
				reason += " (and context " + p.GetDefaultFromContext() + " is empty)"
			}
			return nil, &ParamError{intent, p.GetName(), reason}
		}
	}
	return out, nil
}

func paramNames(def *evidencev1.ToolDefinition) []string {
	var ns []string
	for _, p := range def.GetParamsSchema() {
		ns = append(ns, p.GetName())
	}
	return ns
}

// coerce converts a Struct value to the parameter's type. Slash commands send
// every value as text, so numeric and boolean strings are accepted.
func coerce(p *evidencev1.ToolParam, v *structpb.Value) (any, error) {
	switch p.GetType() {
	case evidencev1.ParamType_PARAM_TYPE_NUMBER:
		switch k := v.GetKind().(type) {
		case *structpb.Value_NumberValue:
			if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
				return nil, fmt.Errorf("want a finite number")
			}
			return k.NumberValue, nil
		case *structpb.Value_StringValue:
			f, err := strconv.ParseFloat(strings.TrimSpace(k.StringValue), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("want a number, got %q", k.StringValue)
			}
			return f, nil
		}
		return nil, fmt.Errorf("want a number, got %s", kindName(v))
	case evidencev1.ParamType_PARAM_TYPE_BOOLEAN:
		switch k := v.GetKind().(type) {
		case *structpb.Value_BoolValue:
			return k.BoolValue, nil
		case *structpb.Value_StringValue:
			b, err := strconv.ParseBool(strings.TrimSpace(k.StringValue))
			if err != nil {
				return nil, fmt.Errorf("want a boolean, got %q", k.StringValue)
			}
			return b, nil
		}
		return nil, fmt.Errorf("want a boolean, got %s", kindName(v))
	default: // string, select
		var s string
		switch k := v.GetKind().(type) {
		case *structpb.Value_StringValue:
			s = strings.TrimSpace(k.StringValue)
		case *structpb.Value_NumberValue:
			s = strconv.FormatFloat(k.NumberValue, 'f', -1, 64)
		case *structpb.Value_BoolValue:
			s = strconv.FormatBool(k.BoolValue)
		default:
			return nil, fmt.Errorf("want a string, got %s", kindName(v))
		}
		if p.GetType() == evidencev1.ParamType_PARAM_TYPE_SELECT && len(p.GetOptions()) > 0 && s != "" {
			for _, o := range p.GetOptions() {
				if strings.EqualFold(o, s) {
					return o, nil
				}
			}
			return nil, fmt.Errorf("%q is not one of %s", s, strings.Join(p.GetOptions(), ", "))
		}
		return s, nil
	}
}

func kindName(v *structpb.Value) string {
	switch v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return "a string"
	case *structpb.Value_NumberValue:
		return "a number"
	case *structpb.Value_BoolValue:
		return "a boolean"
	case *structpb.Value_ListValue:
		return "a list"
	case *structpb.Value_StructValue:
		return "an object"
	}
	return "null"
}

// Window is a call's time range and where it came from.
type Window struct {
	Start, End time.Time
	// Origin is "params", "context" or "default".
	Origin string
}

// Duration is End-Start.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// Proto returns the window as a TimeWindow.
func (w Window) Proto() *evidencev1.TimeWindow {
	return &evidencev1.TimeWindow{Start: tsOf(w.Start), End: tsOf(w.End)}
}

// resolveWindow picks the call's time window: params start/end/since (and
// the seed's since_minutes/range_minutes), else the context's incident
// window, else now-def..now.
// windowCatchUp bounds how far past the incident window's end a call's
// window follows the clock when the investigation runs late.
const windowCatchUp = 2 * time.Hour

func resolveWindow(intent string, p Params, rc *evidencev1.RouterContext, now time.Time, def time.Duration) (Window, error) {
	ctxStart, ctxEnd := time.Time{}, time.Time{}
	if tw := rc.GetTimeWindow(); tw != nil {
		if tw.GetStart() != nil {
			ctxStart = tw.GetStart().AsTime()
		}
		if tw.GetEnd() != nil {
			ctxEnd = tw.GetEnd().AsTime()
		}
	}
	w := Window{Origin: "default"}
	switch {
	case !ctxStart.IsZero() && !ctxEnd.IsZero():
		w = Window{Start: ctxStart, End: ctxEnd, Origin: "context"}
		// An investigation that runs after the incident window closed sees
		// what happened since (a rollback, a recovery), up to windowCatchUp.
		if now.After(ctxEnd) && now.Sub(ctxEnd) <= windowCatchUp {
			w.End = now
		}
	case !ctxEnd.IsZero():
		w = Window{Start: ctxEnd.Add(-def), End: ctxEnd, Origin: "context"}
	case !ctxStart.IsZero():
		end := now
		if end.Before(ctxStart) {
			end = ctxStart.Add(def)
		}
		w = Window{Start: ctxStart, End: end, Origin: "context"}
	default:
		w = Window{Start: now.Add(-def), End: now}
	}

	var lookback time.Duration
	if s := p.String("since"); s != "" {
		d, err := parseSince(s)
		if err != nil {
			return Window{}, &ParamError{intent, "since", err.Error()}
		}
		lookback = d
	}
	for _, name := range []string{"since_minutes", "range_minutes"} {
		if p.Has(name) {
			m := p.Float(name, 0)
			if m <= 0 {
				return Window{}, &ParamError{intent, name, "must be > 0"}
			}
			d, err := durationOf(m, time.Minute)
			if err != nil {
				return Window{}, &ParamError{intent, name, err.Error()}
			}
			lookback = d
		}
	}
	var start, end time.Time
	for _, name := range []string{"start", "end"} {
		s := p.String(name)
		if s == "" {
			continue
		}
		t, err := parseTime(s)
		if err != nil {
			return Window{}, &ParamError{intent, name, err.Error()}
		}
		if name == "start" {
			start = t
		} else {
			end = t
		}
	}
	if !end.IsZero() {
		w.End, w.Origin = end, "params"
	}
	if lookback > 0 {
		w.Start, w.Origin = w.End.Add(-lookback), "params"
	}
	if !start.IsZero() {
		w.Start, w.Origin = start, "params"
	}
	for _, b := range []struct {
		name string
		t    time.Time
	}{{"start", w.Start}, {"end", w.End}} {
		if !representable(b.t) {
			return Window{}, &ParamError{intent, b.name, fmt.Sprintf("window %s %s is outside years 1 to 9999", b.name, b.t.Format(time.RFC3339))}
		}
	}
	if !w.Start.Before(w.End) {
		return Window{}, &ParamError{intent, "start", fmt.Sprintf("window start %s is not before end %s", w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339))}
	}
	return w, nil
}

// representable reports whether t fits a record's timestamp (years 1 to 9999).
func representable(t time.Time) bool { return timestamppb.New(t).CheckValid() == nil }

// durationOf is n units as a Duration, refusing what overflows int64
// nanoseconds (about 292 years) instead of wrapping.
func durationOf(n float64, unit time.Duration) (time.Duration, error) {
	f := n * float64(unit)
	if math.IsNaN(f) || f >= math.MaxInt64 || f <= math.MinInt64 {
		return 0, fmt.Errorf("%g is too long (at most %s)", n, time.Duration(math.MaxInt64).Truncate(time.Hour))
	}
	return time.Duration(f), nil
}

func parseSince(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64)
		if err == nil && n > 0 {
			return durationOf(n, 24*time.Hour)
		}
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil && n > 0 {
		return durationOf(n, time.Minute) // a bare number is minutes
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("want a positive duration such as 30m or 2h, got %q", s)
	}
	return d, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 1e9 {
		t := time.Unix(n, 0).UTC()
		if !representable(t) {
			return time.Time{}, fmt.Errorf("epoch seconds %d are past the year 9999", n)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want an RFC 3339 time, got %q", s)
}
