// Casemap: how the client folds nicks and channel names to compare them. The network's own casemapping is not sent to
// the browser; RFC 1459's (ASCII letters, and []\~ as the lower-case of {}|^, RFC 2812 §2.2) is what most networks
// advertise and is a superset of ascii's for the names that matter. Pure.

export const fold = (name: string): string =>
  name.replace(/[A-Z[\]\\~]/g, (c) => {
    switch (c) {
      case "[":
        return "{"
      case "]":
        return "}"
      case "\\":
        return "|"
      case "~":
        return "^"
      default:
        return c.toLowerCase()
    }
  })

/** The key of a buffer in the client's maps and URLs. */
export const bufferKey = (networkId: number, target: string): string => `${networkId}\n${fold(target)}`

export const serverBuffer = (networkId: number): string => `:server:${networkId}`

export const isChannel = (target: string): boolean => /^[#&!+]/.test(target)
