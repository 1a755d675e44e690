// Package deploy holds the files that run tidegate in production, and the
// tests that hold them to the code:
//
//   - systemd/tidegate-proxy.service: a Type=notify unit for the proxy.
//   - prometheus/tidegate-alerts.yml: alerting rules, with promtool unit
//     tests in prometheus/tidegate-alerts.test.yml.
//   - grafana/tidegate-dashboard.json: a Grafana dashboard.
//   - kubernetes/: a Deployment, its ConfigMap (the proxy's configuration),
//     a LoadBalancer Service and a PodDisruptionBudget, for kubectl apply -k.
//   - compose/: several proxies sharing player state in Redis behind
//     HAProxy (PROXY protocol v2), for docker compose.
//
// The package has no code. Its tests parse every file, check each metric
// and label the rules and the dashboard use against the metrics a real
// in-process proxy, TLV server and push server export, parse the
// ConfigMap's configuration as the proxy does, and run systemd-analyze
// verify and promtool when they are installed. docs/operations.md,
// "Deploying", tells how to use the files.
package deploy
