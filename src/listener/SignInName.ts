/**
 * SignInName: how an IRC client names who it signs in as and what it wants (docs/contract.md "The IRC client
 * listener"): `account[/network][@client]` as the user name (USER, or the SASL PLAIN authentication identity), the
 * suffixes in either order as soju reads them, and ZNC's `PASS account[/network][@client]:secret`. Pure; no state.
 */

export interface SignInName {
  readonly account: string
  /** A network's name or id; null for a control connection. */
  readonly network: string | null
  /** Names the client for its backlog (docs/contract.md); null when the client gave none. */
  readonly client: string | null
}

/** Account names as migrations/0001_init.ts allows them: no `/` or `@`, so the suffixes are unambiguous. */
const ACCOUNT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
const CLIENT = /^[A-Za-z0-9._-]{1,64}$/
const NETWORK = /^[^\s/@:]{1,64}$/

/** The parts of `account[/network][@client]` (either order of the suffixes); undefined when it is not one. */
export const parseSignInName = (raw: string): SignInName | undefined => {
  const first = raw.search(/[/@]/)
  const account = first === -1 ? raw : raw.slice(0, first)
  if (!ACCOUNT.test(account)) return undefined
  let network: string | null = null
  let client: string | null = null
  let rest = first === -1 ? "" : raw.slice(first)
  while (rest !== "") {
    const sigil = rest[0]
    const next = rest.slice(1).search(/[/@]/)
    const value = next === -1 ? rest.slice(1) : rest.slice(1, next + 1)
    rest = next === -1 ? "" : rest.slice(next + 1)
    if (sigil === "/") {
      if (network !== null || !NETWORK.test(value)) return undefined
      network = value
    } else {
      if (client !== null || !CLIENT.test(value)) return undefined
      client = value
    }
  }
  return { account, network, client }
}

/** What a PASS line carries: ZNC's `name:secret`, or the secret alone (the name then comes from USER). */
export interface PassParts {
  readonly name: SignInName | undefined
  readonly secret: string
}

/**
 * Reads PASS. ZNC's form wins whenever what precedes the first `:` is a sign-in name, as in ZNC (a password whose
 * start looks like `name:` must then be sent as `account:password` or by SASL).
 */
export const parsePass = (pass: string): PassParts => {
  const colon = pass.indexOf(":")
  if (colon > 0) {
    const name = parseSignInName(pass.slice(0, colon))
    if (name !== undefined) return { name, secret: pass.slice(colon + 1) }
  }
  return { name: undefined, secret: pass }
}

/** `b` over `a`: the network and client of the later source win where it names them. */
export const mergeSignInNames = (a: SignInName, b: SignInName | undefined): SignInName =>
  b === undefined ? a : { account: b.account, network: b.network ?? a.network, client: b.client ?? a.client }
