package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
)

// network is a private /24 on a bridge of this host, and one network
// namespace per worker plugged into it by a veth pair: a worker reaches the
// host (the Temporal frontend, MinIO) only through its own link, so cutting
// the link cuts the worker off as a failed switch port would.
type network struct {
	t      *testing.T
	id     string // short and random: interface names are 15 bytes at most
	bridge string
	prefix string // the /24's first three octets, "10.x.y"
	nodes  []*netNode
}

// netNode is a worker's namespace: its name, its address and the host side
// of its veth pair.
type netNode struct {
	ns, ip, hostLink string
}

// HostIP is the host's address on the bridge: servers the workers use
// listen there.
func (n *network) HostIP() string { return n.prefix + ".1" }

// newNetwork makes the bridge, or skips the test with the reason when this
// host does not let it (no ip command, no CAP_NET_ADMIN). Everything it
// makes is removed when the test ends.
func newNetwork(t *testing.T) *network {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the cluster test puts each worker in a network namespace: install iproute2 (the ip command)")
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	n := &network{t: t, id: hex.EncodeToString(b)}
	n.bridge = "pcb" + n.id
	n.prefix = freePrefix(b[0], b[1])
	if out, err := ipCommand("link", "add", n.bridge, "type", "bridge"); err != nil {
		t.Skipf("the cluster test needs to make network namespaces and veth pairs (root or CAP_NET_ADMIN): "+
			"ip link add: %v: %s", err, out)
	}
	t.Cleanup(n.remove)
	n.must("addr", "add", n.HostIP()+"/24", "dev", n.bridge)
	n.must("link", "set", n.bridge, "up")
	return n
}

// freePrefix picks a 10.x.y.0/24 no interface of this host is on, starting
// from the random x and y given.
func freePrefix(x, y byte) string {
	taken := map[string]bool{}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
				ip := ipn.IP.To4()
				taken[fmt.Sprintf("%d.%d.%d", ip[0], ip[1], ip[2])] = true
			}
		}
	}
	for i := 0; ; i++ {
		p := fmt.Sprintf("10.%d.%d", 100+int(x+byte(i))%100, y)
		if !taken[p] || i > 255 {
			return p
		}
	}
}

// addNode makes namespace number i (from 1) with its veth pair.
func (n *network) addNode(i int) *netNode {
	n.t.Helper()
	node := &netNode{ns: fmt.Sprintf("porch-%s-w%d", n.id, i), ip: fmt.Sprintf("%s.%d", n.prefix, 10+i),
		hostLink: fmt.Sprintf("pc%sh%d", n.id, i)}
	inner := fmt.Sprintf("pc%sn%d", n.id, i)
	n.must("netns", "add", node.ns)
	n.nodes = append(n.nodes, node)
	n.must("link", "add", node.hostLink, "type", "veth", "peer", "name", inner)
	n.must("link", "set", inner, "netns", node.ns)
	n.must("link", "set", node.hostLink, "master", n.bridge)
	n.must("link", "set", node.hostLink, "up")
	n.must("-n", node.ns, "addr", "add", node.ip+"/24", "dev", inner)
	n.must("-n", node.ns, "link", "set", inner, "up")
	// Entry-script processes and their worker talk over loopback.
	n.must("-n", node.ns, "link", "set", "lo", "up")
	return node
}

// cut takes the node's link down: its packets go nowhere, its TCP
// connections hang instead of closing, as when a machine drops off the net.
func (n *network) cut(node *netNode) {
	n.t.Helper()
	n.must("link", "set", node.hostLink, "down")
}

// command runs name with args inside the node's namespace.
func (node *netNode) command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", node.ns, name}, args...)...)
}

// remove deletes the namespaces (and with them their veth pairs) and the
// bridge. Processes still running in a namespace keep it alive but
// unreachable: the test kills its workers before this runs.
func (n *network) remove() {
	for _, node := range n.nodes {
		if out, err := ipCommand("netns", "del", node.ns); err != nil {
			n.t.Logf("remove network namespace %q: %v: %s", node.ns, err, out)
		}
		// Gone with the namespace, unless the test stopped before moving
		// its peer there.
		_, _ = ipCommand("link", "del", node.hostLink)
	}
	if out, err := ipCommand("link", "del", n.bridge); err != nil {
		n.t.Logf("remove bridge %q: %v: %s", n.bridge, err, out)
	}
}

func (n *network) must(args ...string) {
	n.t.Helper()
	if out, err := ipCommand(args...); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func ipCommand(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
