import { describe, expect, it } from 'vitest';
import { flagLabel, flagName, isValidFlagKey } from '../../../lib/cli/flag-names.ts';

describe('flag names', () => {
  it('turns camelCase keys into kebab-case flags', () => {
    expect(flagName('maxDelayMs')).toBe('max-delay-ms');
    expect(flagName('input')).toBe('input');
    expect(flagName('s3Bucket')).toBe('s3-bucket');
    expect(flagLabel('windowMs')).toBe('--window-ms');
  });

  it('accepts camelCase identifiers only', () => {
    expect(isValidFlagKey('maxDelayMs')).toBe(true);
    expect(isValidFlagKey('s3Bucket')).toBe(true);
    expect(isValidFlagKey('max-delay')).toBe(false);
    expect(isValidFlagKey('MaxDelay')).toBe(false);
    expect(isValidFlagKey('max_delay')).toBe(false);
    expect(isValidFlagKey('1st')).toBe(false);
    expect(isValidFlagKey('')).toBe(false);
  });
});
