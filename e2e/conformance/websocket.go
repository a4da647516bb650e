package conformance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"

	"isobar.dev/controller/pkg/envoysim"
)

// webSocketDialer opens the suite's WebSocket connections through the
// simulated Envoy: the upgrade request is routed by the xDS Envoy holds,
// which must forward it to a backend with endpoints and allow the
// websocket upgrade on that route; the connection then reaches an echo
// server the rig runs for the backend, as the suite's echo backend answers
// on /ws.
type webSocketDialer struct {
	fleet *fleet

	once sync.Once
	echo *httptest.Server
}

func (d *webSocketDialer) Dial(rawURL, protocol, origin string) (*websocket.Conn, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	envoy, port, err := d.fleet.envoyAt(ctx, u.Hostname(), u.Port(), "http")
	if err != nil {
		return nil, err
	}
	sim, err := envoy.Simulator()
	if err != nil {
		return nil, err
	}
	a, err := sim.Simulate(envoysim.Request{
		Port: port, Method: http.MethodGet, Scheme: "http", Authority: u.Host, Path: u.RequestURI(),
		Headers: []envoysim.Header{{Name: "upgrade", Value: "websocket"}, {Name: "connection", Value: "Upgrade"}, {Name: "origin", Value: origin}},
		Seed:    rand.Uint64(),
	})
	if err != nil {
		return nil, err
	}
	switch {
	case a.Response != nil:
		return nil, fmt.Errorf("websocket: bad status %d from Envoy", a.Response.Status)
	case a.Upstream == nil || len(a.Upstream.Endpoints) == 0:
		return nil, fmt.Errorf("websocket: bad status 503 (no healthy upstream)")
	case !slices.Contains(a.Upgrades, "websocket"):
		// Envoy's HTTP connection manager refuses an upgrade no route
		// or manager allows.
		return nil, fmt.Errorf("websocket: bad status 403 (upgrade not allowed on route %s)", a.Route)
	case a.Upstream.Request.Path != "/ws":
		return nil, fmt.Errorf("websocket: bad status 404 (the echo backend serves /ws, Envoy sent %s)", a.Upstream.Request.Path)
	}
	d.once.Do(func() {
		d.echo = httptest.NewServer(websocket.Handler(func(ws *websocket.Conn) {
			var f frame
			for echoCodec.Receive(ws, &f) == nil {
				if echoCodec.Send(ws, f) != nil {
					return
				}
			}
		}))
	})
	return websocket.Dial(strings.Replace(d.echo.URL, "http://", "ws://", 1)+"/ws", protocol, origin)
}

// frame is a WebSocket message with its type (text or binary), which the
// echo answers with.
type frame struct {
	data []byte
	typ  byte
}

var echoCodec = websocket.Codec{
	Marshal: func(v any) ([]byte, byte, error) {
		f := v.(frame)
		return f.data, f.typ, nil
	},
	Unmarshal: func(data []byte, typ byte, v any) error {
		f := v.(*frame)
		f.data, f.typ = append([]byte(nil), data...), typ
		return nil
	},
}
