'use strict'
// node-minecraft-protocol clients for tidegate's tests. Each group of
// options (groups are separated by a lone "--") is one client; all run at
// once in this process, since node's start-up is the slow part.
//
// A client logs in (offline, or online against --session-server with
// --access-token and --profile-id, which a test's own session server
// accepts; with --player-key a 1.19 to 1.19.2 client also carries a chat
// key of its own in Login Start and signs the verify token with it, as a
// vanilla client does), and in play sends --packets custom payloads on tidegate:echo,
// every other one --payload-bytes long (the rest 12 bytes), each starting
// with its sequence number: all at once, or one every --interval-ms. With --echo server (the default) it talks to
// server.js, which echoes them and sends tidegate:hello; with --echo raw it
// sends them framed as the server's custom payload, for a backend that
// echoes frames unchanged (tidegate's fake backend, session/mcbackend).
// Every echo must come back once, in order, unchanged. With --moves N the
// client stays for N more servers (a proxy moving it, through the
// configuration state): after each batch is echoed it sends a last payload
// "ready" (echoed or not), and once each new server's configuration is
// finished it sends the next batch, until N+1 batches came back.
//
// Before 1.20.2 a move shows as a new Join Game (a proxy's respawn
// sequence): each Join Game after the first starts the next batch.
//
// Each client prints one JSON line: {"name","version","protocol","ok",
// "error","sent","echoed","hello","hellos","joinGames","respawns","chats",
// "entityId","signedLogin","joinMs","doneMs"} (hellos: tidegate:hello
// payloads, one a server; joinGames, respawns and chats: those packets
// received, chats as chat or system_chat; entityId: the last Join Game's)
// (signedLogin: its Login Start carried a player key). The exit status is 1
// when any client failed, 2 on bad arguments.
const { parseGroups } = require('./args')
const channels = require('./channels')

let groups
try {
  groups = parseGroups(process.argv.slice(2), {
    name: 'string',
    version: 'string',
    host: 'string',
    port: 'int',
    'server-address': 'string',
    username: 'string',
    auth: 'string',
    'session-server': 'string',
    'access-token': 'string',
    'profile-id': 'string',
    'player-key': 'bool',
    packets: 'int',
    'payload-bytes': 'int',
    echo: 'string',
    'timeout-ms': 'int',
    'interval-ms': 'int',
    moves: 'int'
  })
  for (const g of groups) {
    for (const need of ['version', 'port', 'username']) {
      if (g[need] === undefined) throw new Error(`client ${g.name || groups.indexOf(g)}: --${need} is required`)
    }
    if (g.auth && g.auth !== 'offline' && g.auth !== 'online') throw new Error(`--auth ${g.auth}: want offline or online`)
    if (g.echo && g.echo !== 'server' && g.echo !== 'raw') throw new Error(`--echo ${g.echo}: want server or raw`)
  }
  if (groups.length === 0) throw new Error('no client given')
} catch (err) {
  console.error(`client.js: ${err.message}`)
  process.exit(2)
}
const mc = require('minecraft-protocol')

let failed = 0
let sharedPlayerKeys = null // playerKeys'
let running = groups.length
groups.forEach((g, i) => run(g, i))

function run (opts, index) {
  const started = Date.now()
  const version = opts.version
  const packets = opts.packets ?? 10
  const payloadBytes = opts['payload-bytes'] ?? 300
  const raw = opts.echo === 'raw'
  const moves = opts.moves ?? 0
  const ready = Buffer.from('ready')
  let logins = 0
  const result = {
    name: opts.name || `client${index}`,
    version,
    protocol: null,
    ok: false,
    error: null,
    sent: 0,
    echoed: 0,
    hello: null,
    hellos: 0,
    joinGames: 0,
    respawns: 0,
    chats: 0,
    entityId: null,
    signedLogin: false,
    joinMs: null,
    doneMs: null
  }
  let done = false
  const expected = []

  const clientOpts = {
    host: opts.host || '127.0.0.1',
    port: opts.port,
    version,
    username: opts.username,
    hideErrors: true,
    // Checking the plugin channels' type definitions (with ajv, for every
    // client) was two thirds of this process's CPU; they are fixed here.
    validateChannelProtocol: false
  }
  if (opts['server-address']) clientOpts.fakeHost = opts['server-address']
  if (opts.auth === 'online') {
    if (opts['session-server']) clientOpts.sessionServer = opts['session-server']
    const profileId = (opts['profile-id'] || require('minecraft-protocol/src/datatypes/uuid').nameToMcOfflineUUID(opts.username)).replace(/-/g, '')
    const accessToken = opts['access-token'] || 'tidegate-test-token'
    // An auth function is how a client logs in online without Mojang's or
    // Microsoft's authentication servers: it names the session and connects.
    clientOpts.auth = (client, options) => {
      client.username = opts.username
      client.session = { accessToken, selectedProfile: { id: profileId, name: opts.username } }
      if (opts['player-key']) client.profileKeys = playerKeys()
      options.accessToken = accessToken
      options.haveCredentials = true
      options.connect(client)
    }
  } else {
    clientOpts.auth = 'offline'
  }

  let client
  let timer = null // set once the client runs; finish may come first
  try {
    client = mc.createClient(clientOpts)
  } catch (err) {
    return finish(`createClient: ${err.message}`)
  }
  result.protocol = clientOpts.protocolVersion
  // What setProtocol.js decides when it writes Login Start.
  result.signedLogin = !!client.profileKeys && !require('minecraft-data')(client.version).supportFeature('useChatSessions')
  const timeoutMs = opts['timeout-ms'] || 20000
  timer = setTimeout(() => finish(`timed out after ${timeoutMs} ms (joined: ${result.joinMs !== null}, echoed ${result.echoed} of ${packets})`),
    timeoutMs)

  client.on('error', (err) => finish(`error: ${err.message || err}`))
  client.on('end', (reason) => finish(`connection ended before the echoes (${reason})`))
  for (const name of ['disconnect', 'kick_disconnect']) {
    client.on(name, (packet) => finish(`${name}: ${packet.reason}`))
  }
  let frame = null
  // send sends one payload to be echoed (raw: framed as the server's
  // custom payload, which the backend echoes as a packet this client parses).
  function send (data) {
    if (raw) {
      frame = frame || mc.createSerializer({ state: 'play', isServer: true, version: client.version })
      client.writeRaw(frame.createPacketBuffer({ name: 'custom_payload', params: { channel: channels.echo, data } }))
    } else {
      client.write('custom_payload', { channel: channels.echo, data })
    }
  }
  function sendOne () {
    const n = expected.length
    const data = payload(n, n % 2 === 1 ? Math.max(payloadBytes, 4) : 12)
    expected.push(data)
    send(data)
    result.sent++
  }
  // sendBatch sends one batch of packets for the server just joined.
  function sendBatch () {
    const interval = opts['interval-ms'] || 0
    if (interval > 0) {
      // One at a time, so that the stream spans whatever the test does
      // meanwhile (a live upgrade).
      let sent = 0
      const ticker = setInterval(() => {
        if (done || sent === packets) return clearInterval(ticker)
        sent++
        sendOne()
      }, interval)
    } else {
      for (let i = 0; i < packets; i++) sendOne()
    }
    check()
  }
  const configState = require('minecraft-data')(client.version).supportFeature('hasConfigurationState')
  client.on('login', (packet) => {
    result.joinGames++
    result.entityId = packet.entityId
    if (!configState && result.joinGames > 1) setImmediate(sendBatch) // a move's new server
  })
  client.on('respawn', () => { result.respawns++ })
  for (const name of ['chat', 'system_chat']) client.on(name, () => { result.chats++ })
  client.on('playerJoin', () => {
    result.joinMs = Date.now() - started
    sendBatch()
  })
  // Each server joined ends its configuration (the Login that follows may
  // not parse from a fake backend, and is not waited for).
  client.on('finish_configuration', () => {
    if (++logins > 1) setImmediate(sendBatch) // a move's new server
  })
  client.on('custom_payload', (packet) => {
    if (packet.channel === channels.hello) {
      try {
        result.hello = JSON.parse(packet.data.toString('utf8'))
        result.hellos++
      } catch (err) {
        return finish(`tidegate:hello is not JSON: ${err.message}`)
      }
    } else if (packet.channel === channels.echo) {
      if (ready.equals(packet.data)) return
      const want = expected[result.echoed]
      if (want === undefined) return finish(`echo ${result.echoed + 1} came back, only ${result.sent} were sent`)
      if (!want.equals(packet.data)) {
        return finish(`echo ${result.echoed} differs: ${packet.data.length} bytes ${packet.data.subarray(0, 8).toString('hex')}..., want ${want.length} bytes ${want.subarray(0, 8).toString('hex')}...`)
      }
      result.echoed++
    }
    check()
  })

  function check () {
    if (result.joinMs === null || result.echoed !== expected.length || !(raw || result.hello !== null)) return
    // Before 1.20.2 there is no configuration to count, but Join Games.
    const joins = Math.max(configState ? logins : result.joinGames, 1)
    if (joins >= moves + 1 && result.echoed === packets * (moves + 1)) return finish(null)
    if (moves > 0 && result.echoed === packets * joins) send(ready)
  }

  function finish (error) {
    if (done) return
    done = true
    clearTimeout(timer)
    result.ok = error === null
    result.error = error
    result.doneMs = Date.now() - started
    process.stdout.write(JSON.stringify(result) + '\n')
    if (error !== null) failed++
    if (client) client.end('done')
    // The exit waits for the results to be written: a pipe is written
    // asynchronously on some systems (macOS).
    if (--running === 0) process.stdout.write('', () => process.exit(failed > 0 ? 1 : 0))
  }
}

// playerKeys returns the chat key every --player-key client of this
// process carries, in the shape minecraft-protocol's Microsoft login gives
// (client.profileKeys): an RSA key pair, its expiry, and Mojang's
// signatures of it (v1 for 1.19, v2 for 1.19.1-1.19.2), which here are
// random bytes: no Mojang key signed them, so a server that checks them
// against Mojang's key (node's server does, in offline mode too) refuses
// the login, which is how a test sees that a proxy passed the key on.
function playerKeys () {
  if (sharedPlayerKeys === null) {
    const crypto = require('crypto')
    const { publicKey, privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 })
    sharedPlayerKeys = {
      public: publicKey,
      private: privateKey,
      expiresOn: new Date(Date.now() + 3600 * 1000),
      signature: crypto.randomBytes(512),
      signatureV2: crypto.randomBytes(512)
    }
  }
  return sharedPlayerKeys
}

// payload is packet i's data: its sequence number (big-endian uint32),
// then filler that differs per packet.
function payload (i, size) {
  const b = Buffer.alloc(size)
  b.writeUInt32BE(i, 0)
  for (let j = 4; j < size; j++) b[j] = (i * 31 + j * 7) & 0xff
  return b
}
