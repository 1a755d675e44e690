'use strict'
// Command-line parsing shared by client.js and server.js: --name value
// pairs and bare --flag switches, in groups separated by a lone "--".

// parseGroups splits argv into groups at "--" and parses each into an
// object; spec maps each option to 'string', 'int' or 'bool' (a switch).
// An unknown option or a missing or malformed value throws.
function parseGroups (argv, spec) {
  const groups = [[]]
  for (const a of argv) {
    if (a === '--') groups.push([])
    else groups[groups.length - 1].push(a)
  }
  return groups.filter(g => g.length > 0).map(g => parseGroup(g, spec))
}

function parseGroup (args, spec) {
  const out = {}
  for (let i = 0; i < args.length; i++) {
    const a = args[i]
    if (!a.startsWith('--')) throw new Error(`argument ${JSON.stringify(a)}: want --option`)
    const name = a.slice(2)
    const kind = spec[name]
    if (kind === undefined) throw new Error(`unknown option --${name}`)
    if (kind === 'bool') {
      out[name] = true
      continue
    }
    if (i + 1 >= args.length) throw new Error(`option --${name} needs a value`)
    const v = args[++i]
    if (kind === 'int') {
      if (!/^-?\d+$/.test(v)) throw new Error(`option --${name} ${JSON.stringify(v)}: want an integer`)
      out[name] = Number(v)
    } else if (kind === 'list') {
      (out[name] = out[name] || []).push(v)
    } else {
      out[name] = v
    }
  }
  return out
}

module.exports = { parseGroups }
