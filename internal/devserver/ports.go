package devserver

import (
	"fmt"
	"net"
	"runtime"
	"strconv"
)

// FreePort returns a TCP port on 127.0.0.1 that nothing listens on.
//
// Nothing reserves the port: another process may take it before the caller
// binds it, which is unlikely within a few seconds (see below).
func FreePort() (int, error) {
	return freePort(defaultIP)
}

// freePort asks the kernel for a free port on ip. On Linux ephemeral ports are
// chosen at random and may come back soon after release; leaving a connection
// closed by the listening side in TIME_WAIT keeps the kernel from handing the
// same port to another bind(:0), while an explicit bind still succeeds because
// Go sets SO_REUSEADDR.
func freePort(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return port, nil
	}
	client, err := net.Dial("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	_ = server.Close()
	return port, nil
}

// checkPortFree reports an error if ip:port cannot be bound now.
func checkPortFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d on %s is not free: %w", port, ip, err)
	}
	return l.Close()
}

// checkAddressFree says whether host:port can be listened on now.
func checkAddressFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("address %s is not free: %w", addr, err)
	}
	return l.Close()
}
