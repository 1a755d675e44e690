package handover

// State is a relaying session as it travels to the new process.
type State struct {
	Listener int `json:"listener"`
	// Listen is the configured address of that listener: the new process's
	// indices differ from this one's once a reload added or removed
	// listeners here, or its configuration orders them otherwise.
	Listen    string  `json:"listen,omitempty"`
	Raw       bool    `json:"raw"`
	IP        string  `json:"ip"`
	Remote    string  `json:"remote,omitempty"` // ip:port the PROXY header gave, if any
	Host      string  `json:"host,omitempty"`
	User      string  `json:"user,omitempty"`
	Protocol  int32   `json:"protocol,omitempty"`
	Group     string  `json:"group"`
	Backend   string  `json:"backend"`
	Opened    int64   `json:"opened,omitempty"` // unix nanoseconds, when the client connected
	C2S       Scanner `json:"c2s"`
	S2C       Scanner `json:"s2c"`
	ClientIn  []byte  `json:"client_in,omitempty"`  // read from the client, not yet relayed (encrypted, as it came)
	BackendIn []byte  `json:"backend_in,omitempty"` // read from the backend, not yet relayed
	// Relayed (and counted, and scanned) here but not yet sent: the new
	// process sends these before the input above. ToClient is encrypted
	// already.
	ToClient  []byte `json:"to_client,omitempty"`
	ToBackend []byte `json:"to_backend,omitempty"`
	// Cluster is the session's place in the network's state, which the new
	// process takes over under the same token .
	Cluster *Cluster `json:"cluster,omitempty"`
	// Login is what a session whose login the proxy completed (login:
	// online or offline) keeps of it; nil for a relayed login. Version 2.
	Login *Login `json:"login,omitempty"`
	// Cipher is the state of an encrypted client connection (login:
	// online). It is never part of the JSON: Encode writes it in the
	// message's binary tail, and the type redacts itself everywhere else.
	// Version 2.
	Cipher *Cipher `json:"-"`
}

// Cluster is a session's cluster ticket as it travels.
type Cluster struct {
	Token  string `json:"token"`
	Record string `json:"record"` // cluster.Session.Record, read back with cluster.ParseRecord
}

// Scanner is a session's frame scanner's position in one direction.
type Scanner struct {
	Remaining int    `json:"remaining"`
	Length    uint32 `json:"length"`
	Shift     uint8  `json:"shift"`
	Broken    bool   `json:"broken"`
}

// Login is what a relaying session whose login the proxy completed keeps
// of it: the compression thresholds of both sides (-1: off) and the
// player's profile, as the session server gave it (login: online) or the
// offline one.
type Login struct {
	ClientThreshold  int        `json:"client_threshold"`
	BackendThreshold int        `json:"backend_threshold"`
	UUID             [16]byte   `json:"uuid"`
	Name             string     `json:"name"`
	Properties       []Property `json:"properties,omitempty"`
}

// Property is one property of a player's profile (skin textures).
type Property struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Signature string `json:"signature,omitempty"`
}
