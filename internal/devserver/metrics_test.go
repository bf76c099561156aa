package devserver

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServerMetrics checks the server's own Prometheus metrics on
// MetricsAddress: the frontend's request counter once it has served one.
func TestServerMetrics(t *testing.T) {
	t.Parallel()
	port, err := FreePort()
	require.NoError(t, err)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	startServer(t, Options{MetricsAddress: addr})
	// start waited for the frontend to answer, so requests were counted.
	body, resp := get(t, "http://"+addr+"/metrics")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "service_requests{")
}

// TestServerMetricsAddressBusy checks the error for a metrics address in
// use: the server's own listener would only log it.
func TestServerMetricsAddressBusy(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, err = Start(t.Context(), Options{MetricsAddress: l.Addr().String()})
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "metrics: address "+l.Addr().String()+" is not free"), err.Error())
}
