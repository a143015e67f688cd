import { describe, expect, it } from 'vitest';
import { refuseForgedRequest } from '../../../lib/runtime/control/rest-guard.ts';

const v4 = { host: '127.0.0.1', port: 8081 };
const v6 = { host: '::1', port: 8081 };
const json = { 'content-type': 'application/json' };
const status = (method: string, headers: Record<string, string>, bound = v4) => refuseForgedRequest(method, headers, bound)?.status ?? 200;

describe('refuseForgedRequest', () => {
  it('accepts the bound address and localhost, with or without the port; refuses other hosts and ports', () => {
    expect(status('GET', { host: '127.0.0.1:8081' })).toBe(200);
    expect(status('GET', { host: 'localhost' })).toBe(200);
    expect(status('GET', { host: 'LOCALHOST:8081' })).toBe(200);
    expect(status('GET', { host: '127.0.0.1:8082' })).toBe(403);
    expect(status('GET', { host: '[::1]:8081' })).toBe(403);
    expect(status('GET', { host: 'localhost.:8081' })).toBe(403);
    expect(status('GET', { host: '127.0.0.1:8081/x' })).toBe(403);
    expect(status('GET', {})).toBe(403);
  });

  it('accepts [::1] when bound there, and not 127.0.0.1', () => {
    expect(status('GET', { host: '[::1]:8081' }, v6)).toBe(200);
    expect(status('GET', { host: 'localhost:8081' }, v6)).toBe(200);
    expect(status('GET', { host: '127.0.0.1:8081' }, v6)).toBe(403);
    expect(status('POST', { host: '[::1]:8081', origin: 'http://[::1]:8081', ...json }, v6)).toBe(200);
  });

  it('checks Origin on anything but GET and HEAD, and Content-Type on POST', () => {
    const host = '127.0.0.1:8081';
    expect(status('GET', { host, origin: 'http://evil.example' })).toBe(200);
    expect(status('POST', { host, origin: 'http://evil.example', ...json })).toBe(403);
    expect(status('POST', { host, origin: 'http://127.0.0.1:9999', ...json })).toBe(403);
    expect(status('POST', { host, origin: 'http://localhost:8081', ...json })).toBe(200);
    expect(status('DELETE', { host, origin: 'http://evil.example' })).toBe(403);
    expect(status('DELETE', { host })).toBe(200);
    expect(status('POST', { host, 'content-type': 'Application/JSON ; charset=utf-8' })).toBe(200);
    expect(status('POST', { host, 'content-type': 'application/jsonp' })).toBe(415);
    expect(status('POST', { host, 'content-type': 'multipart/form-data; boundary=x' })).toBe(415);
  });
});
