package brain

import (
	"regexp"
	"testing"

	"github.com/rcamesh/rcamesh/internal/llm"
	"github.com/rcamesh/rcamesh/services/tools"
)

// TestToolSchemasMeetStrictNormalizer holds every tool of the registry, as
// the brain offers it to a model, to the strictest normalizer (OpenAI strict
// mode) and to the compatible one: adding a tool whose schema a provider
// would reject fails here, not in production.
func TestToolSchemasMeetStrictNormalizer(t *testing.T) {
	reg, err := tools.DefaultRegistry()
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	if len(reg.Intents()) < 10 {
		t.Fatalf("registry has %d tools", len(reg.Intents()))
	}
	for _, intent := range reg.Intents() {
		tool, _ := reg.Get(intent)
		s := toolSchema(tool.Def)
		if !name.MatchString(s.Name) {
			t.Errorf("%s: tool name %q is not a valid function name", intent, s.Name)
		}
		if s.Description == "" {
			t.Errorf("%s: no description for the model", intent)
		}
		strict, err := llm.NormalizeStrict(s.Parameters)
		if err != nil {
			t.Errorf("%s: strict normalizer refuses the schema: %v", intent, err)
			continue
		}
		if err := llm.ValidateStrict(strict); err != nil {
			t.Errorf("%s: normalized schema is not strict: %v", intent, err)
		}
		if _, err := llm.NormalizeCompatible(s.Parameters); err != nil {
			t.Errorf("%s: compatible normalizer refuses the schema: %v", intent, err)
		}
		props, _ := s.Parameters["properties"].(map[string]any)
		if len(props) != len(tool.Def.GetParamsSchema()) {
			t.Errorf("%s: %d schema properties for %d params", intent, len(props), len(tool.Def.GetParamsSchema()))
		}
	}
}
