// Package testkit holds nothing itself: its subpackages are the helpers that
// tests share (waiting, leak checks, log capture, in-process servers, a real
// redis-server, go-mc's bot, a fake Mojang session server, a test binary
// standing in for tidegate). Product code never imports them;
// TestImportDirections in the dependency test fails if it does.
package testkit
