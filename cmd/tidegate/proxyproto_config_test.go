package main

import "testing"

// TestValidateConfigChecksProxyProtocol: --validate-config reports a bad
// trusted CIDR and unknown PROXY protocol versions, with positions, and
// exits 2.
func TestValidateConfigChecksProxyProtocol(t *testing.T) {
	path := writeConfig(t, `listeners:
  - listen: 127.0.0.1:25577
    proxy_protocol: {accept: v2, trusted: [10.0.0.0/33]}
  - listen: 127.0.0.1:25578
    proxy_protocol: {accept: v3, trusted: [10.0.0.1]}
default_group: main
groups:
  main:
    backends: [{addr: 127.0.0.1:25565}]
    send_proxy_protocol: v9
`)
	want := "tidegate: configuration is invalid:\n" +
		path + `:3:44: listeners[0].proxy_protocol.trusted[0]: "10.0.0.0/33": want an IP address or a CIDR prefix, as 192.0.2.10 or 10.0.0.0/8` + "\n" +
		path + `:5:30: listeners[1].proxy_protocol.accept: "v3": want off, v1, v2 or any` + "\n" +
		path + `:10:26: groups.main.send_proxy_protocol: "v9": want off, v1 or v2`
	err := testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", path, "--validate-config"})
	if code := exitCode(err); code != exitConfig || err == nil || err.Error() != want {
		t.Fatalf("exit code %d, message:\n%v\nwant %d and:\n%s", code, err, exitConfig, want)
	}
	ok := writeConfig(t, `listeners:
  - listen: 127.0.0.1:25577
    proxy_protocol: {accept: any, trusted: [127.0.0.1, "::1", 10.0.0.0/8]}
default_group: main
groups:
  main:
    backends: [{addr: 127.0.0.1:25565}]
    send_proxy_protocol: v2
`)
	if err := testApp(&syncBuffer{}).Run([]string{"tidegate", "proxy", "--config", ok, "--validate-config"}); err != nil {
		t.Fatalf("a valid PROXY protocol configuration: %v", err)
	}
}
