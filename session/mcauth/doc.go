// Package mcauth authenticates online-mode Minecraft logins at the proxy:
// the server's RSA-1024 key pair (made by New), a fresh verify token per
// login (NewChallenge), the Encryption Request, the checks of the client's
// Encryption Response (its verify token, or the 1.19 to 1.19.2 signature
// of it, and a 16-byte shared secret), the server hash, and the session
// server's hasJoined, which gives the player's profile (UUID, name,
// properties with their signatures).
//
// A login, as the proxy drives it on its event loop:
//
//	ch := mcauth.NewChallenge()                         // kept with the session
//	out = auth.AppendEncryptionRequest(out, protocol, &ch) // after Login Start
//	// ... the client's Encryption Response arrives (frame body):
//	resp, err := mc.ParseEncryptionResponse(body, protocol)   // err: close, counted by mc.ErrorReason
//	f := auth.Authenticate(mcauth.Login{Username: name, ClientIP: ip,
//		Challenge: ch, Response: resp, PlayerKey: key},
//		func(r mcauth.Result) { loop.Execute(func() { s.authVerdict(r) }) })
//	// f != nil: the pool is full (nothing was decrypted): send the
//	// plaintext disconnect f.AppendDisconnectJSON, count f.Reason.
//	// Else pause reading; the verdict comes through the callback.
//
// In authVerdict, on the loop: when r.HaveSecret, turn on
// mc.NewConnCiphers(r.SharedSecret[:]) at once, before writing anything,
// and decrypt whatever the client sent meanwhile (it encrypts everything
// after its response); then, when r.Failure is nil, go on with r.Profile,
// else send the disconnect r.Failure.AppendDisconnectJSON (encrypted when
// r.HaveSecret, as vanilla does), count r.Failure.Reason (the
// Authenticator counts it too: Failures, Accepted) and log r.Failure.Err.
// A verdict that arrives after the session ended or timed out is dropped
// by the caller (a sequence number, as for the cluster's verdicts).
//
// Every failure has a stable Reason and the text a vanilla server gives:
// a wrong verify token or bad secret is vanilla's "Protocol error"
// exception, a refusal of the session server (204) is "Failed to verify
// username!", and the session server's errors and timeouts, a login that
// waited too long for a worker, and a full queue are "Authentication
// servers are down. Please try again later, sorry!".
//
// No goroutine per login: Authenticate queues the login on a bounded pool
// (reactor/workerpool: Config.Workers goroutines, started on demand, and
// Config.Queue waiting logins; a full queue refuses at once). A login's
// verdict comes within Config.Timeout of Authenticate, queueing included:
// a login that found no worker within it is slow (ReasonSlow) and is not
// sent; the session server call gets what is left (ReasonTimeout past it).
//
// Where the RSA decryption runs: on the pool, with the session server call.
// One PKCS #1 v1.5 decryption with the RSA-1024 key takes 0.43 to 0.51 ms
// of CPU (BenchmarkDecryptPKCS1v15, cpu-ns/op; Verify, two of them, 0.9 to
// 1.3 ms) on this project's 2-core AMD EPYC machine, measured 2026-12-02
// while other work loaded it (the wall clock said 1.2 to 2.1 ms). On the
// loop each login would stall every session of that loop for about a
// millisecond of CPU, longer than a relayed frame's whole p99 budget, and
// a burst of logins would stall it for their sum. On the pool it costs the hop to
// a worker and back (microseconds), and logins decrypt on as many cores as
// the pool has workers. Verify and HasJoined are exported for callers that
// want them alone; they block and count nothing.
//
// The player's chat key in a 1.19 to 1.19.2 Login Start is used only to
// check the signed verify token; whether Mojang signed the key is not
// checked here.
package mcauth
