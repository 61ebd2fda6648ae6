package testcert

import (
	"net"
	"slices"
	"testing"
)

func hasIP(ips []net.IP, want string) bool {
	return slices.ContainsFunc(ips, func(ip net.IP) bool { return ip.Equal(net.ParseIP(want)) })
}

func TestSubjectAltNames(t *testing.T) {
	ips, names := subjectAltNames([]string{"10.244.0.20", "cosmos.e2e.svc", "[fd00::5]", "127.0.0.1", "fe80::1%eth0", "Cosmos.E2E.svc", ""})
	for _, want := range []string{"127.0.0.1", "::1", "10.244.0.20", "fd00::5", "fe80::1"} {
		if !hasIP(ips, want) {
			t.Errorf("IP SANs %v lack %s", ips, want)
		}
	}
	if len(ips) != 5 {
		t.Errorf("IP SANs %v: want each address once", ips)
	}
	if !slices.Equal(names, []string{"localhost", "cosmos.e2e.svc"}) {
		t.Errorf("DNS SANs %v", names)
	}

	// A wildcard listener is reachable by every interface address.
	ips, _ = subjectAltNames([]string{"0.0.0.0"})
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	if !hasIP(ips, "0.0.0.0") {
		t.Errorf("IP SANs %v lack 0.0.0.0", ips)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !hasIP(ips, n.IP.String()) {
			t.Errorf("IP SANs %v lack interface address %s", ips, n.IP)
		}
	}
}
