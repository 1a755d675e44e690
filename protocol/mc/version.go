package mc

// Protocol version numbers of releases where the protocol changes in ways a
// proxy cares about.
const (
	Protocol1_7_10 = 5   // oldest version with the modern handshake
	Protocol1_13   = 393 // legacy Forge ("\x00FML\x00") ends before this
	Protocol1_20_2 = 764 // adds the configuration state
	Protocol1_20_5 = 766 // adds the transfer next state
)

// HasConfigurationState reports whether protocol version v has the
// configuration state between login and play (1.20.2 and later). Snapshot
// versions (bit 30 set) are compared numerically and so count as later.
func HasConfigurationState(v int32) bool {
	return v >= Protocol1_20_2
}
