package session

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/tidegate/tidegate/protocol/mc"
)

// sessionServer is the loopback session server of the online-mode
// targets: GET /session/minecraft/hasJoined answers every username with a
// server ID with the player's profile (its offline-mode UUID, and a
// textures property of the size Mojang's are, so that a proxy keeps as much
// per player as it would). It checks no join: the load generator's clients
// do not call join (its cost is the client's, not the proxy's).
type sessionServer struct {
	srv     *http.Server
	ln      net.Listener
	answers atomic.Int64
}

// Sizes of a real textures property: about 400 base64 characters of value
// and a 684-character signature (RSA-4096).
const (
	texturesValueLen     = 300
	texturesSignatureLen = 512
)

func startSessionServer() (*sessionServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("session server: listening on loopback: %w", err)
	}
	s := &sessionServer{ln: ln}
	value := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("t", texturesValueLen)))
	sig := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("s", texturesSignatureLen)))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /session/minecraft/hasJoined", func(w http.ResponseWriter, r *http.Request) {
		name, id := r.URL.Query().Get("username"), r.URL.Query().Get("serverId")
		if name == "" || id == "" {
			http.Error(w, "username and serverId are required", http.StatusBadRequest)
			return
		}
		uuid := mc.OfflineUUID([]byte(name))
		s.answers.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": hex.EncodeToString(uuid[:]), "name": name,
			"properties": []map[string]string{{"name": "textures", "value": value, "signature": sig}}})
	})
	s.srv = &http.Server{Handler: mux}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the server's base URL.
func (s *sessionServer) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server.
func (s *sessionServer) Close() error {
	if err := s.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("session server: %w", err)
	}
	return nil
}
