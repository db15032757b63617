package intake

import "testing"

// A Nagios-family notification (Checkmk's, Icinga's, Naemon's macros)
// names its check by the service description, not by whom it is sent to,
// and its previous state is not its current one.
func TestNagiosFamilyNotification(t *testing.T) {
	tests := []struct {
		name, body       string
		title, hostLabel string
		resolved         bool
	}{
		{
			name: "checkmk macros",
			body: `{"WHAT":"SERVICE","NOTIFICATIONTYPE":"PROBLEM","HOSTNAME":"edge-sw-2","SERVICEDESC":"Interface Te1/1/4",
				"SERVICESTATE":"CRIT","LASTSERVICESTATE":"OK","SERVICEOUTPUT":"[4] (down)","CONTACTNAME":"netops"}`,
			title: "Interface Te1/1/4", hostLabel: "edge-sw-2",
		},
		{
			name:  "lower-case service_description, recipient first in order",
			body:  `{"contact_name":"oncall","host_name":"db-9","service_description":"Disk /var","last_state":"OK","output":"DISK CRITICAL - free space: /var 210 MB (2%)"}`,
			title: "Disk /var", hostLabel: "db-9",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			as, err := Parse([]byte(tc.body), "")
			if err != nil {
				t.Fatal(err)
			}
			a := as[0]
			if a.GetTitle() != tc.title {
				t.Errorf("title = %q, want %q", a.GetTitle(), tc.title)
			}
			if a.GetResolved() != tc.resolved {
				t.Errorf("resolved = %v (state %q), want %v: the last state is the one before", a.GetResolved(), a.GetState(), tc.resolved)
			}
			found := false
			for _, v := range a.GetLabels() {
				found = found || v == tc.hostLabel
			}
			if !found {
				t.Errorf("labels %v lack the host %q", a.GetLabels(), tc.hostLabel)
			}
		})
	}
}

// An envelope named by nothing but the machine it came from (an SNMP
// trap forwarded as JSON) is read, not refused: its host names it.
func TestHostNamedEnvelopeIsRead(t *testing.T) {
	body := `{"agent_address":"10.9.0.4","forwarder":"snmptrapd","hostname":"tor-sw-3","trap_oid":"IF-MIB::linkDown","varbinds":{"ifIndex":"17","ifOperStatus":"down"}}`
	as, err := Parse([]byte(body), "")
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if got := as[0].GetAlertName(); got != "tor-sw-3" {
		t.Errorf("alert name %q, want the host that sent it", got)
	}
}
