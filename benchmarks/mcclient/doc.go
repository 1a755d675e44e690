// Package mcclient is the client side of the Minecraft protocol that the
// load tools speak: the offline login (protocol 5, 1.7.10) into play and the
// PLAY frames whose bodies the session and players workloads and mcload
// build and check.
package mcclient
