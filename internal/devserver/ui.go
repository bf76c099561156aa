package devserver

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// uiStartTimeout bounds the wait for the UI's listener.
const uiStartTimeout = 10 * time.Second

// webUI is a running Temporal web UI behind its front proxy.
type webUI struct {
	server *uiserver.Server
	done   chan struct{} // closed when the server's Start returns
	front  *frontProxy   // nil until started
}

// startUI serves the Temporal web UI on ip:port, talking to frontend, and
// returns once it accepts connections. ui-server listens on a free port of
// the internal IP, behind a proxy on ip:port that serves pages under
// /porch/ (see Server.ServePages) and adds banner, if not empty, to the
// top of the UI's pages: ui-server has no setting for either.
//
// ui-server's Start exits the process when it cannot listen, so the port is
// checked first; only a process taking the port in between could still hit
// that.
func startUI(ctx context.Context, ip string, port int, frontend, banner string) (*webUI, error) {
	if err := checkPortFree(ip, port); err != nil {
		return nil, fmt.Errorf("web UI: %w", err)
	}
	internal := internalIP(ip)
	internalPort, err := freePort(internal)
	if err != nil {
		return nil, fmt.Errorf("web UI: %w", err)
	}
	ui, err := startUIServer(ctx, internal, internalPort, frontend)
	if err != nil {
		return nil, err
	}
	upstream := net.JoinHostPort(internal, strconv.Itoa(internalPort))
	if ui.front, err = startFrontProxy(net.JoinHostPort(ip, strconv.Itoa(port)), upstream, banner); err != nil {
		ui.stop()
		return nil, fmt.Errorf("web UI: %w", err)
	}
	return ui, nil
}

// startUIServer runs ui-server on ip:port and waits until it listens.
func startUIServer(ctx context.Context, ip string, port int, frontend string) (*webUI, error) {
	srv := uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                ip,
		Port:                port,
		TemporalGRPCAddress: frontend,
		EnableUI:            true,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
	}))
	ui := &webUI{server: srv, done: make(chan struct{})}
	go func() {
		defer close(ui.done)
		_ = srv.Start() // returns when stopped; other errors exit inside it
	}()
	if err := waitListening(ctx, net.JoinHostPort(ip, strconv.Itoa(port)), ui.done); err != nil {
		ui.stop()
		return nil, fmt.Errorf("web UI: %w", err)
	}
	return ui, nil
}

// waitListening dials addr until it answers, the context ends, stopped (if
// not nil) is closed or uiStartTimeout passes.
func waitListening(ctx context.Context, addr string, stopped <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, uiStartTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var d net.Dialer
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not listening on %s: %w", addr, ctx.Err())
		case <-stopped:
			return fmt.Errorf("stopped before listening on %s", addr)
		case <-tick.C:
		}
	}
}

func (u *webUI) stop() {
	if u.front != nil {
		u.front.stop()
	}
	u.server.Stop()
	<-u.done
}
