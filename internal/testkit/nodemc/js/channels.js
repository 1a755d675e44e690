'use strict'
// The plugin channels client.js and server.js talk on.
module.exports = { echo: 'tidegate:echo', hello: 'tidegate:hello' }
