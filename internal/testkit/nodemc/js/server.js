'use strict'
// node-minecraft-protocol servers for tidegate's tests, several in one
// process (node's start-up is the slow part): one per --serve
// VERSION@THRESHOLD[@online], where THRESHOLD is the compression threshold
// (-1 turns compression off). Offline mode unless --online (every server)
// or @online (that one), which asks the session server at --session-server
// (Mojang's when not given) hasJoined.
//
// In play each server sends the client a custom payload on tidegate:hello
// (JSON: the username, UUID, protocol and handshake address it saw, the
// last with whatever a proxy's forwarding put in it, and whether the
// player's Login Start carried a chat key that checked out) and echoes every custom
// payload the client sends on tidegate:echo back on the same channel.
//
// With --join-game each server starts play with a Join Game (as a vanilla
// server does; its entity ID is the server's port), and reports a payload
// "ready" on tidegate:echo (which client.js sends when it may be moved) as
// an echo-ready event.
//
// Standard output is one JSON object a line: {"event":"listening",...,
// "port":N} per server, then {"event":"ready"}, then join, leave and error
// events. It runs until killed.
const { parseGroups } = require('./args')
const channels = require('./channels')

const [opts] = parseGroups(process.argv.slice(2), {
  host: 'string', serve: 'list', online: 'bool', 'session-server': 'string', motd: 'string', 'join-game': 'bool'
})
if (!opts || !opts.serve) {
  console.error('usage: node server.js --serve VERSION@THRESHOLD[@online] [--serve ...] [--host H] [--online [--session-server URL]]')
  process.exit(2)
}
if (opts['session-server']) {
  // createServer's login asks yggdrasil.server({agent}) with no host, so
  // the session server's address goes in here.
  const yggdrasil = require('yggdrasil')
  const server = yggdrasil.server
  yggdrasil.server = (o) => server({ ...o, host: opts['session-server'] })
}
const mc = require('minecraft-protocol')

function emit (obj) { process.stdout.write(JSON.stringify(obj) + '\n') }
// A reader that went away (the test ended) ends the servers too.
process.stdout.on('error', () => process.exit(0))

let serverKey = null // sharedServerKey's, made at the first online server
let pending = opts.serve.length
for (const spec of opts.serve) {
  const m = /^([^@]+)@(-?\d+)(@online)?$/.exec(spec)
  if (!m) {
    console.error(`--serve ${JSON.stringify(spec)}: want VERSION@THRESHOLD[@online], such as 1.20.4@256 or 1.8.8@-1@online`)
    process.exit(2)
  }
  serve(m[1], Number(m[2]), !!opts.online || m[3] !== undefined)
}

function serve (version, threshold, online) {
  const server = mc.createServer({
    host: opts.host || '127.0.0.1',
    port: 0,
    version,
    'online-mode': online,
    motd: opts.motd || 'tidegate nodemc server',
    hideErrors: true,
    // Checking the plugin channels' type definitions (with ajv, for every
    // connection) costs more CPU than the rest of a login; they are fixed.
    validateChannelProtocol: false,
    errorHandler: (client, err) => {
      emit({ event: 'error', version, username: client.username, error: String(err && err.message ? err.message : err) })
      client.end(String(err))
    },
    // Login always sends Set Compression 256 (from 1.8); this replaces it
    // with the wanted threshold, or drops it.
    beforeLogin: (client) => setThreshold(client, threshold)
  })
  // Each server would make its own key pair in JavaScript (node-rsa) at
  // its first online login, taking seconds of CPU on a loaded machine;
  // node's own RSA makes one for all of them at once.
  if (online) server.serverKey = sharedServerKey()
  const protocol = server.mcversion.version
  server.on('listening', () => {
    emit({ event: 'listening', version, protocol, compressionThreshold: threshold, online, port: server.socketServer.address().port })
    if (--pending === 0) emit({ event: 'ready' })
  })
  server.on('error', (err) => {
    emit({ event: 'error', version, error: String(err.message || err) })
    process.exit(1)
  })
  server.on('playerJoin', (client) => {
    const port = server.socketServer.address().port
    emit({ event: 'join', version, port, username: client.username, uuid: client.uuid })
    client.on('end', (reason) => emit({ event: 'leave', version, port, username: client.username, reason: String(reason) }))
    client.on('custom_payload', (packet) => {
      if (packet.channel !== channels.echo) return
      if (opts['join-game'] && packet.data.toString() === 'ready') emit({ event: 'echo-ready', version, port, username: client.username })
      client.write('custom_payload', { channel: channels.echo, data: packet.data })
    })
    if (opts['join-game']) client.write('login', joinGame(version, port))
    client.write('custom_payload', {
      channel: channels.hello,
      data: Buffer.from(JSON.stringify({ username: client.username, uuid: client.uuid, protocol: client.protocolVersion, serverHost: client.serverHost, playerKey: !!client.profileKeys }))
    })
  })
}

// joinGame is the Join Game a server of version sends, with entity ID id:
// minecraft-data's sample from 1.16 (its dimension codec), a plain
// overworld before.
function joinGame (version, id) {
  const sample = require('minecraft-data')(version).loginPacket
  if (sample) return { ...sample, entityId: id }
  return { entityId: id, gameMode: 0, dimension: 0, difficulty: 2, maxPlayers: 20, levelType: 'default', reducedDebugInfo: false }
}

// sharedServerKey is the process's RSA-1024 key pair as node-rsa's
// NodeRSA, which minecraft-protocol's login uses.
function sharedServerKey () {
  if (serverKey === null) {
    const NodeRSA = require('node-rsa')
    const { privateKey } = require('crypto').generateKeyPairSync('rsa', { modulusLength: 1024 })
    serverKey = new NodeRSA(privateKey.export({ type: 'pkcs1', format: 'pem' }), 'pkcs1-private-pem', { encryptionScheme: 'pkcs1' })
  }
  return serverKey
}

// setThreshold makes the coming Set Compression carry threshold, or not
// be sent at all when threshold is negative.
function setThreshold (client, threshold) {
  const write = client.write
  client.write = function (name, params) {
    if (name === 'compress') {
      if (threshold < 0) return
      params = { ...params, threshold }
    }
    return write.call(this, name, params)
  }
  // Login then sets client.compressionThreshold = 256 to start its own
  // compression; it is shadowed here (once) to take threshold instead.
  Object.defineProperty(client, 'compressionThreshold', {
    configurable: true,
    get () { return this.compressor == null ? -2 : this.compressor.compressionThreshold },
    set (v) {
      delete this.compressionThreshold
      client.write = write
      if (threshold >= 0) this.setCompressionThreshold(threshold)
    }
  })
}
