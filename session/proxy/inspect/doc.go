// Package inspect looks at the clientbound packets of the relayed
// sessions that need it, on the loop, in place: a terminated login (the
// proxy completed it, so the backend's side of the stream is plaintext)
// whose group has a fallback, so that a backend's Disconnect can move the
// player instead of ending the game (session/proxy/kick), and whatever
// else registers a User (the BungeeCord plugin channel).
//
// A Stream walks the backend's bytes frame by frame in the backend's
// framing (its compression threshold), reads each frame's packet ID
// (inflating no more of a compressed frame than the ID takes) and
// follows the protocol state the ID means a change of (1.20.2 and later:
// Finish Configuration leads to play, Start Configuration back to
// configuration). Every frame goes on to the client unchanged except one
// a User claims; a User claims by ID and state first (Wants), then, once
// the frame is whole and inflated, by its content (Claim). A frame that
// is not whole yet is forwarded as far as it goes unless it could be
// claimed (its ID is one a User wants, or not yet readable): then it is
// held in the connection's input until it is whole, never more than the
// protocol's frame limit (a length past it is a violation: Relay's error).
// A re-framed session (its client compresses at another threshold) gets
// whole frames only, converted by session/proxy/reframe.
//
// In steady state nothing is allocated: the Loop keeps one zlib reader
// for packet IDs and one re-framing codec; a claimed frame is inflated
// into the loop's mc.Compressor. A session without a Stream relays as
// before, untouched.
package inspect
