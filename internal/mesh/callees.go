package mesh

import (
	"reflect"

	brainv1 "github.com/rcamesh/rcamesh/gen/rcamesh/brain/v1"
	criticv1 "github.com/rcamesh/rcamesh/gen/rcamesh/critic/v1"
	deliveryv1 "github.com/rcamesh/rcamesh/gen/rcamesh/delivery/v1"
	routerv1 "github.com/rcamesh/rcamesh/gen/rcamesh/router/v1"
	toolsv1 "github.com/rcamesh/rcamesh/gen/rcamesh/tools/v1"
)

// clientTypes maps each service's generated client interface to its name.
var clientTypes = map[reflect.Type]string{
	reflect.TypeFor[routerv1.RouterServiceClient]():     Router,
	reflect.TypeFor[toolsv1.ToolsServiceClient]():       Tools,
	reflect.TypeFor[criticv1.CriticServiceClient]():     Critic,
	reflect.TypeFor[brainv1.BrainServiceClient]():       Brain,
	reflect.TypeFor[deliveryv1.DeliveryServiceClient](): Delivery,
}

// Callees lists, in the order of All, the services whose generated clients
// a service's dependencies struct holds (its exported fields of a client
// type): the services it calls. A process that runs the service must run
// each of them or know its address; deriving the list from the struct keeps
// the two from drifting apart.
func Callees(deps any) []string {
	t := reflect.TypeOf(deps)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	called := map[string]bool{}
	for f := range t.Fields() {
		if name, ok := clientTypes[f.Type]; ok && f.IsExported() {
			called[name] = true
		}
	}
	var out []string
	for _, n := range All {
		if called[n] {
			out = append(out, n)
		}
	}
	return out
}
