package testredis

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartReplica starts a redis-server replicating s, on a free port.
func (s *Server) StartReplica(t testing.TB) *Server {
	t.Helper()
	return launch(t, nil, []string{"--replicaof", "127.0.0.1", strconv.Itoa(s.port)})
}

// Sentinels are Sentinel processes (redis-server --sentinel) a test
// started, monitoring one master.
type Sentinels struct {
	// Master is the name they monitor it under.
	Master string
	// Servers are the Sentinels.
	Servers []*Server
}

// StartSentinels starts n Sentinels monitoring master as name with quorum.
// They take a master for down after 1 s without an answer and may fail it
// over again 2 s after a failover.
func StartSentinels(t testing.TB, name string, master *Server, n, quorum int) *Sentinels {
	t.Helper()
	conf := func(int) string {
		return fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\nsentinel down-after-milliseconds %[1]s 1000\n"+
			"sentinel failover-timeout %[1]s 2000\nsentinel parallel-syncs %[1]s 1\n", name, master.port, quorum)
	}
	ss := &Sentinels{Master: name}
	for range n {
		ss.Servers = append(ss.Servers, launch(t, conf, []string{"--sentinel"}))
	}
	return ss
}

// Addrs are the Sentinels' addresses.
func (ss *Sentinels) Addrs() []string { return addrs(ss.Servers) }

// addrs are the servers' addresses.
func addrs(servers []*Server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = s.Addr()
	}
	return out
}

// Name returns nil when every Sentinel names addr the master, else which
// does not.
func (ss *Sentinels) Name(addr string) error {
	for _, s := range ss.Servers {
		if err := ss.names(s, addr); err != nil {
			return err
		}
	}
	return nil
}

// names returns nil when the Sentinel s names addr the master.
func (ss *Sentinels) names(s *Server, addr string) error {
	r, err := Command(s.Addr(), "SENTINEL", "get-master-addr-by-name", ss.Master)
	if err != nil {
		return err
	}
	if f := strings.Fields(r); len(f) != 2 || net.JoinHostPort(f[0], f[1]) != addr {
		return fmt.Errorf("sentinel %s names %q the master, want %s", s.Addr(), r, addr)
	}
	return nil
}

// ReplicaOf makes s a replica of master (REPLICAOF) unless it is one, and
// returns nil once its link to it is up, else its replication state: call
// it until it returns nil.
func (s *Server) ReplicaOf(master *Server) error {
	info, err := Command(s.Addr(), "INFO", "replication")
	if err != nil {
		return err
	}
	port := strconv.Itoa(master.port)
	if !strings.Contains(info, "master_port:"+port+"\r\n") {
		if _, err := Command(s.Addr(), "REPLICAOF", "127.0.0.1", port); err != nil {
			return err
		}
		return fmt.Errorf("%s: REPLICAOF 127.0.0.1 %s sent", s.Addr(), port)
	}
	if !strings.Contains(info, "master_link_status:up") {
		return fmt.Errorf("%s: the link to %s is not up: %s", s.Addr(), master.Addr(), info)
	}
	return nil
}

// Agree returns nil when every Sentinel names addr the master and knows
// want replicas of it linked to it and the other Sentinels, so that it
// could fail it over; else what is missing.
func (ss *Sentinels) Agree(addr string, want int) error {
	for _, s := range ss.Servers {
		if err := ss.names(s, addr); err != nil {
			return err
		}
		rs, err := Command(s.Addr(), "SENTINEL", "replicas", ss.Master)
		if err != nil {
			return err
		}
		if n := strings.Count(rs, " role-reported slave "); n < want || strings.Count(rs, " master-link-status ok ") < want {
			return fmt.Errorf("sentinel %s knows %d replicas, want %d linked: %s", s.Addr(), n, want, rs)
		}
		sn, err := Command(s.Addr(), "SENTINEL", "sentinels", ss.Master)
		if err != nil {
			return err
		}
		if n := strings.Count(sn, " runid "); n < len(ss.Servers)-1 {
			return fmt.Errorf("sentinel %s knows %d other sentinels, want %d", s.Addr(), n, len(ss.Servers)-1)
		}
	}
	return nil
}

// Cluster is a Redis Cluster a test started: its nodes, masters first.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts masters × (1 + replicas) redis-server processes with
// cluster mode on (node timeout 1 s, each bus on a free port of its own),
// joins them with redis-cli --cluster create and waits until every node
// says the cluster is ok.
func StartCluster(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	cli := program(t, "redis-cli")
	conf := func(int) string {
		bus, err := freePort()
		if err != nil {
			return "" // the start fails on the next port
		}
		return fmt.Sprintf("cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout 1000\ncluster-port %d\n", bus)
	}
	c := &Cluster{}
	for range masters * (1 + replicas) {
		c.Nodes = append(c.Nodes, launch(t, conf, nil))
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		for {
			info, err := Command(n.Addr(), "CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s: cluster not ok within 20s: %q %v", n.Addr(), info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// Addrs are the nodes' addresses.
func (c *Cluster) Addrs() []string { return addrs(c.Nodes) }

// Command sends one command to the Redis at addr and returns its answer
// flattened to text: a status, number or string as it is, an array's
// elements joined by spaces (nested arrays too), nil as "". An error
// answer is an error.
func Command(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(c), 0)
}

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader, depth int) (string, error) {
	if depth > 8 {
		return "", fmt.Errorf("a reply nested deeper than 8")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("an empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		parts := make([]string, 0, n)
		for range n {
			p, err := readReply(r, depth+1)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, " "), nil
	}
	return "", fmt.Errorf("a reply of type %q", line[0])
}

// MasterOf returns the address of the master that serves key's hash slot
// as the first node that answers sees it, "" when none knows.
func (c *Cluster) MasterOf(key string) string {
	for _, n := range c.Nodes {
		slotText, err := Command(n.Addr(), "CLUSTER", "KEYSLOT", key)
		if err != nil {
			continue
		}
		slot, err := strconv.Atoi(slotText)
		if err != nil {
			continue
		}
		nodes, err := Command(n.Addr(), "CLUSTER", "NODES")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
				continue
			}
			for _, r := range f[8:] {
				lo, hi, ok := strings.Cut(r, "-")
				if !ok {
					hi = lo
				}
				a, err1 := strconv.Atoi(lo)
				b, err2 := strconv.Atoi(hi)
				if err1 == nil && err2 == nil && a <= slot && slot <= b {
					addr, _, _ := strings.Cut(f[1], "@")
					return addr
				}
			}
		}
	}
	return ""
}

// Node returns the node at addr, nil if none is.
func (c *Cluster) Node(addr string) *Server {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}
