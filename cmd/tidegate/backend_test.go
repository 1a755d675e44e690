package main

import (
	"bufio"
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/tidegate/tidegate/protocol/mc"
	"github.com/tidegate/tidegate/session/mcbackend"
)

// TestBackendChunkReplies runs `tidegate backend --chunk-replies`: a chunk
// request gets its reply, and a play frame around it its echo.
func TestBackendChunkReplies(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	runCommand(t, "backend", "--listen", listen, "--loops", "1", "--chunk-replies")
	c, err := net.DialTimeout("tcp", listen, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	login := mc.AppendHandshake(nil, mc.Handshake{ProtocolVersion: mc.Protocol1_7_10, Address: []byte("localhost"), Port: 25565, NextState: mc.NextStateLogin})
	login = mc.AppendPacket(login, mc.PacketLoginStart, mc.AppendString(nil, []byte("Chunky")))
	req := append(mcbackend.AppendChunkRequest(nil, 10000), "tail"...)
	play := mc.AppendPacket(nil, 0x03, []byte("before"))
	if _, err := c.Write(bytes.Join([][]byte{login, play, mc.AppendVarInt(nil, int32(len(req))), req, play}, nil)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for i, want := range []struct {
		id   int32
		size int
	}{{mc.PacketLoginSuccess, -1}, {0x03, len("before")}, {mcbackend.ChunkRequestPacketID, 10000 - 1}, {0x03, len("before")}} {
		id, data, err := readMCFrame(r)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if id != want.id || (want.size >= 0 && len(data) != want.size) {
			t.Fatalf("frame %d: packet 0x%02x of %d bytes, want 0x%02x of %d", i, id, len(data), want.id, want.size)
		}
		if id == mcbackend.ChunkRequestPacketID && !bytes.HasPrefix(data, req[1:]) {
			t.Fatalf("the chunk reply does not start with its request")
		}
	}
}
