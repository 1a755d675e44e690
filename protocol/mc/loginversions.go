package mc

// Login state packet IDs the terminating login adds to those in login.go.
const (
	PacketLoginPluginRequest  = 0x04 // clientbound, 1.13+: a channel and data the client answers
	PacketLoginPluginResponse = 0x02 // serverbound, 1.13+: the answer to a plugin request
	PacketLoginAcknowledged   = 0x03 // serverbound, 1.20.2+: the client enters configuration
)

// Protocol versions at which a login packet changes shape.
const (
	Protocol1_7_2       = 4   // Login Success carries the UUID as 32 plain hex digits
	Protocol1_8         = 47  // Set Compression appears
	Protocol1_16        = 735 // Login Success carries the UUID as 16 bytes
	Protocol1_19        = 759 // Login Start carries signature data; Login Success properties
	Protocol1_21_2      = 768 // Login Success drops "strict error handling"
	ProtocolLoginPlugin = Protocol1_13
)

// UUIDForm is how a Login Success carries the player's UUID.
type UUIDForm uint8

// UUID forms of Login Success.
const (
	UUIDHex    UUIDForm = iota // a String of 32 plain hex digits (1.7.2 and older)
	UUIDDashed                 // a String in 8-4-4-4-12 form (1.7.6 to 1.15.2)
	UUIDBinary                 // 16 bytes (1.16 and later)
)

// LoginStartForm is which fields a Login Start carries after the name.
type LoginStartForm uint8

// Login Start forms.
const (
	StartNameOnly   LoginStartForm = iota // the name alone (up to 1.18.2)
	StartSig                              // 1.19: optional signature data (key expiry, public key, signature)
	StartSigOptUUID                       // 1.19.1–1.19.2: optional signature data, then an optional UUID
	StartOptUUID                          // 1.19.3–1.20.1: an optional UUID
	StartUUID                             // 1.20.2 and later: a UUID
)

// LoginLayout is the shape of the login packets at a range of protocol
// versions, as one row of the table LoginLayoutOf reads.
type LoginLayout struct {
	From    int32  // the first protocol version of the row
	Release string // the first release of the row, for messages

	Start          LoginStartForm
	SuccessUUID    UUIDForm
	SuccessProps   bool // Login Success carries the profile's properties
	SuccessStrict  bool // Login Success ends with the strict-error-handling Boolean
	Compression    bool // Set Compression exists
	PluginMessages bool // Login Plugin Request and Response exist
	Acknowledge    bool // the client answers Login Success with Login Acknowledged, then configuration
}

// loginLayouts is every login shape from 1.7.2 on, by first version.
var loginLayouts = [...]LoginLayout{
	{From: 0, Release: "1.7.2", SuccessUUID: UUIDHex},
	{From: 5, Release: "1.7.6", SuccessUUID: UUIDDashed},
	{From: Protocol1_8, Release: "1.8", SuccessUUID: UUIDDashed, Compression: true},
	{From: Protocol1_13, Release: "1.13", SuccessUUID: UUIDDashed, Compression: true, PluginMessages: true},
	{From: Protocol1_16, Release: "1.16", SuccessUUID: UUIDBinary, Compression: true, PluginMessages: true},
	{From: Protocol1_19, Release: "1.19", Start: StartSig, SuccessUUID: UUIDBinary, SuccessProps: true, Compression: true, PluginMessages: true},
	{From: ProtocolLoginUUIDOptional, Release: "1.19.1", Start: StartSigOptUUID, SuccessUUID: UUIDBinary, SuccessProps: true, Compression: true, PluginMessages: true},
	{From: ProtocolLoginUUIDNoSig, Release: "1.19.3", Start: StartOptUUID, SuccessUUID: UUIDBinary, SuccessProps: true, Compression: true, PluginMessages: true},
	{From: ProtocolLoginUUID, Release: "1.20.2", Start: StartUUID, SuccessUUID: UUIDBinary, SuccessProps: true, Compression: true, PluginMessages: true, Acknowledge: true},
	{From: Protocol1_20_5, Release: "1.20.5", Start: StartUUID, SuccessUUID: UUIDBinary, SuccessProps: true, SuccessStrict: true, Compression: true, PluginMessages: true, Acknowledge: true},
	{From: Protocol1_21_2, Release: "1.21.2", Start: StartUUID, SuccessUUID: UUIDBinary, SuccessProps: true, Compression: true, PluginMessages: true, Acknowledge: true},
}

// LoginLayoutOf returns the shape of the login packets at protocol version
// v: the last row of the table whose From is at most v. A negative v gets
// the first row; snapshots (bit 30 set) count as the newest.
func LoginLayoutOf(v int32) LoginLayout {
	l := loginLayouts[0]
	for _, r := range loginLayouts[1:] {
		if v < r.From {
			break
		}
		l = r
	}
	return l
}
