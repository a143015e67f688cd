/**
 * Exact decimal arithmetic on DynamoDB number strings, so that two ADDs to one attribute can be folded into one
 * without the rounding of binary floating point (0.1 + 0.2 must stay 0.3, as DynamoDB computes it).
 */
interface Decimal {
  /** value = mantissa * 10^exponent */
  readonly mantissa: bigint;
  readonly exponent: number;
}

/** DynamoDB keeps at most 38 significant digits. */
const MAX_SIGNIFICANT_DIGITS = 38;

const NUMBER = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?$/;

function parseDecimal(text: string): Decimal | undefined {
  const m = NUMBER.exec(text.trim());
  if (m === null) return undefined;
  const whole = m[2] ?? '';
  const fraction = m[3] ?? '';
  if (whole === '' && fraction === '') return undefined;
  const digits = BigInt(`${whole}${fraction}` || '0');
  return normalize({ mantissa: m[1] === '-' ? -digits : digits, exponent: Number(m[4] ?? '0') - fraction.length });
}

function normalize(d: Decimal): Decimal {
  if (d.mantissa === 0n) return { mantissa: 0n, exponent: 0 };
  let { mantissa, exponent } = d;
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent++;
  }
  return { mantissa, exponent };
}

function significantDigits(d: Decimal): number {
  return (d.mantissa < 0n ? -d.mantissa : d.mantissa).toString().length;
}

function formatDecimal(d: Decimal): string {
  const n = normalize(d);
  const negative = n.mantissa < 0n;
  const digits = (negative ? -n.mantissa : n.mantissa).toString();
  let text: string;
  if (n.exponent >= 0) text = digits + '0'.repeat(n.exponent);
  else if (digits.length > -n.exponent) text = `${digits.slice(0, n.exponent)}.${digits.slice(n.exponent)}`;
  else text = `0.${'0'.repeat(-n.exponent - digits.length)}${digits}`;
  return negative ? `-${text}` : text;
}

/** The sum of two number strings, or undefined when either is not a number or the sum needs more than 38 digits. */
export function addDecimalStrings(a: string, b: string): string | undefined {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  if (x === undefined || y === undefined) return undefined;
  const exponent = Math.min(x.exponent, y.exponent);
  const sum = normalize({
    mantissa: x.mantissa * 10n ** BigInt(x.exponent - exponent) + y.mantissa * 10n ** BigInt(y.exponent - exponent),
    exponent,
  });
  return significantDigits(sum) > MAX_SIGNIFICANT_DIGITS ? undefined : formatDecimal(sum);
}

/** One spelling per number ("1.50" and "1.5" are the same set element to DynamoDB). */
export function canonicalDecimal(text: string): string {
  const d = parseDecimal(text);
  return d === undefined ? text : formatDecimal(d);
}
