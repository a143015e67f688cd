/** Job flag keys are camelCase identifiers; on the command line they are kebab-case (`maxDelayMs` = `--max-delay-ms`). */
const FLAG_KEY = /^[a-z][a-zA-Z0-9]*$/;

export function isValidFlagKey(key: string): boolean {
  return FLAG_KEY.test(key);
}

/** `maxDelayMs` -> `max-delay-ms`, `s3Bucket` -> `s3-bucket`. */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** The flag as typed on the command line, for messages: `--max-delay-ms`. */
export function flagLabel(key: string): string {
  return `--${flagName(key)}`;
}
