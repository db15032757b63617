package critic

import "testing"

// Objects that route to, configure or admit a workload are told from
// workloads, pods and nodes, whose health does clear them.
func TestRoutingObject(t *testing.T) {
	for entity, want := range map[string]bool{
		"httproute/bookings/room-booking": true,
		"ingress/shop/web":                true,
		"configmap/edge/haproxy":          true,
		"service/records/plots":           true,
		"deployment/shop/web":             false,
		"pod/shop/web-1":                  false,
		"node/ip-10-0-0-1":                false,
		"commit/abc1234":                  false,
		"":                                false,
	} {
		if got := routingObject(entity); got != want {
			t.Errorf("routingObject(%q) = %v, want %v", entity, got, want)
		}
	}
}
