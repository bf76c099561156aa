package devserver

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInsecureIPKeepsInternalServicesOnLoopback starts a server on every
// interface: the frontend and the UI listen there, history, matching and
// worker on 127.0.0.1 only, and the log and the UI warn.
func TestInsecureIPKeepsInternalServicesOnLoopback(t *testing.T) {
	t.Parallel()
	uiPort, err := FreePort()
	require.NoError(t, err)
	var logs lockedBuffer
	s := startServer(t, Options{IP: "0.0.0.0", Insecure: true, UIPort: uiPort, LogWriter: &logs})
	internal := map[string]int{"history": s.ports.history, "matching": s.ports.matching, "worker": s.ports.worker}

	if _, err := os.Stat("/proc/net/tcp"); err == nil {
		for name, port := range internal {
			require.Equal(t, []string{"127.0.0.1"}, listeners(t, port), "%s service, port %d", name, port)
		}
		// Go listens on 0.0.0.0 with a dual-stack socket, shown as ::.
		everywhere := []string{"0.0.0.0", "::"}
		require.Subset(t, everywhere, listeners(t, s.ports.frontend), "frontend")
		require.Subset(t, everywhere, listeners(t, uiPort), "web UI")
		require.NotEmpty(t, listeners(t, uiPort), "web UI")
	}
	if ip := nonLoopbackIPv4(t); ip != "" {
		for name, port := range internal {
			conn, err := net.Dial("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err == nil {
				conn.Close()
			}
			require.Error(t, err, "%s service reachable at %s:%d", name, ip, port)
		}
		conn, err := net.Dial("tcp", net.JoinHostPort(ip, strconv.Itoa(s.ports.frontend)))
		require.NoError(t, err, "the frontend listens on every interface")
		conn.Close()
	}

	warning := InsecureWarning("0.0.0.0")
	require.Contains(t, logs.String(), "level=WARN msg=\"INSECURE: the Temporal server and its web UI listen on 0.0.0.0")

	ui := fmt.Sprintf("http://127.0.0.1:%d", uiPort)
	body, resp := get(t, ui+"/namespaces/default/workflows")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `<body><div role="alert"`, "the banner opens the page")
	require.Contains(t, body, html.EscapeString(warning))
	require.Contains(t, body, "_app/immutable", "the rest of the Temporal UI's page")
	// The UI's API still answers through the banner's proxy.
	body, resp = get(t, ui+"/api/v1/namespaces/default")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, resp.Header.Get("Content-Type"), "application/json")
	require.Contains(t, body, `"name": "default"`)
	require.NotContains(t, body, "INSECURE")
}

func TestNonLoopbackIPNeedsInsecure(t *testing.T) {
	t.Parallel()
	for _, ip := range []string{"0.0.0.0", "::"} {
		s, err := Start(context.Background(), Options{IP: ip})
		if s != nil {
			_ = s.Stop()
		}
		require.ErrorIs(t, err, ErrNotLoopback, ip)
		require.ErrorContains(t, err, "IP "+ip+" is not a loopback address: the server has no client authentication")
	}
}

func TestLoopbackIPHasNoBanner(t *testing.T) {
	t.Parallel()
	uiPort, err := FreePort()
	require.NoError(t, err)
	var logs lockedBuffer
	s := startServer(t, Options{UIPort: uiPort, LogWriter: &logs})
	body, _ := get(t, s.UIAddress()+"/")
	require.NotContains(t, body, `role="alert"`)
	require.NotContains(t, logs.String(), "INSECURE")
}

// listeners returns the addresses listening on TCP port, from the kernel's
// socket tables (IPv4 and IPv6).
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var out []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(table)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			const listen = "0A"
			if len(f) < 4 || f[3] != listen {
				continue
			}
			hexIP, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err != nil || int(p) != port {
				continue
			}
			out = append(out, procIP(t, hexIP))
		}
	}
	slices.Sort(out)
	return out
}

// procIP decodes an address of /proc/net/tcp: 32-bit words in the host's
// byte order, little-endian on the machines porch's tests run on.
func procIP(t *testing.T, s string) string {
	b, err := hex.DecodeString(s)
	require.NoError(t, err, s)
	for i := 0; i+4 <= len(b); i += 4 {
		slices.Reverse(b[i : i+4])
	}
	return net.IP(b).String()
}

// nonLoopbackIPv4 returns an IPv4 address of this machine other than
// loopback, or "".
func nonLoopbackIPv4(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
