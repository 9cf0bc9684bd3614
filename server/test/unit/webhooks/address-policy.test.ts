/**
 * SSRF classification (reference.md 4.4: Svix's is_allowed list, IPv4-mapped forms canonicalised
 * first) and endpoint URL rules (decisions.md section 9).
 */
import { describe, expect, it } from 'vitest';
import { checkEndpointUrl, classifyAddress, ipv6Bytes } from '../../../src/modules/webhooks/address-policy.js';

const strict = { allowPrivateNetworks: false };
const dev = { allowPrivateNetworks: true };
const cls = (ip: string, o = strict) => classifyAddress(ip, o)?.class;
const allowed = (ip: string, o = strict) => classifyAddress(ip, o)?.allowed;

describe('address classification', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.1.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['192.0.0.192', 'metadata'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['192.0.2.10', 'documentation'],
    ['198.51.100.10', 'documentation'],
    ['203.0.113.10', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['192.88.99.1', 'reserved'],
  ])('IPv4 %s is %s and refused', (ip, expected) => {
    expect(cls(ip)).toBe(expected);
    expect(allowed(ip)).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.15.255.255', '172.32.0.0', '100.63.255.255', '100.128.0.0', '169.253.255.255', '198.17.255.255', '198.20.0.0', '223.255.255.255'])(
    'IPv4 %s is public',
    (ip) => {
      expect(cls(ip)).toBe('public');
      expect(allowed(ip)).toBe(true);
    },
  );

  it.each([
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['febf:ffff::1', 'link_local'],
    ['fc00::1', 'unique_local'],
    ['fd12:3456:789a::1', 'unique_local'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['64:ff9b::808:808', 'nat64'],
    ['64:ff9b::8.8.8.8', 'nat64'],
    ['64:ff9b:1::1', 'nat64'],
    ['2002:c000:0204::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'reserved'],
    ['::8.8.8.8', 'reserved'], // IPv4-compatible (deprecated)
    ['100::1', 'reserved'], // discard-only
    ['4000::1', 'reserved'], // outside global unicast
  ])('IPv6 %s is %s and refused', (ip, expected) => {
    expect(cls(ip)).toBe(expected);
    expect(allowed(ip)).toBe(false);
  });

  it.each(['2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e', '2001:4::1'])('IPv6 %s is public', (ip) => {
    expect(cls(ip)).toBe('public');
    expect(allowed(ip)).toBe(true);
  });

  it.each([
    ['::ffff:127.0.0.1', 'loopback', '127.0.0.1'],
    ['::ffff:7f00:1', 'loopback', '127.0.0.1'],
    ['0:0:0:0:0:ffff:7f00:0001', 'loopback', '127.0.0.1'],
    ['[::ffff:127.0.0.1]', 'loopback', '127.0.0.1'],
    ['::FFFF:A9FE:A9FE', 'metadata', '169.254.169.254'],
    ['::ffff:169.254.169.254', 'metadata', '169.254.169.254'],
    ['::ffff:10.0.0.1', 'private', '10.0.0.1'],
    ['::ffff:c0a8:101', 'private', '192.168.1.1'],
    ['::ffff:100.64.0.1', 'cgnat', '100.64.0.1'],
    ['::ffff:0.0.0.0', 'unspecified', '0.0.0.0'],
  ])('IPv4-mapped %s is canonicalised to the IPv4 it reaches (%s)', (ip, expected, canonical) => {
    const v = classifyAddress(ip, strict)!;
    expect(v).toMatchObject({ class: expected, canonical, family: 4, allowed: false });
  });

  it('an IPv4-mapped public address is the public IPv4 address', () => {
    expect(classifyAddress('::ffff:8.8.8.8', strict)).toEqual({ allowed: true, class: 'public', canonical: '8.8.8.8', family: 4 });
  });

  it('WEBHOOK_ALLOW_PRIVATE_NETWORKS opens loopback, private, link-local, CGNAT and ULA, never metadata and the like', () => {
    for (const ip of ['127.0.0.1', '::1', '10.0.0.1', '192.168.0.5', '169.254.3.3', '100.64.1.1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1']) {
      expect(allowed(ip, dev), ip).toBe(true);
    }
    for (const ip of ['169.254.169.254', '::ffff:169.254.169.254', 'fd00:ec2::254', '0.0.0.0', '::', '224.0.0.1', '255.255.255.255', '240.0.0.1', '64:ff9b::7f00:1', '2002:7f00:1::1']) {
      expect(allowed(ip, dev), ip).toBe(false);
    }
  });

  it('non-addresses are not classified', () => {
    for (const s of ['example.com', 'localhost', '1.2.3', '256.1.1.1', '::gg', '1:2:3:4:5:6:7:8:9', '']) expect(classifyAddress(s, strict)).toBeNull();
  });

  it('expands every IPv6 spelling to the same 16 bytes', () => {
    const a = ipv6Bytes('2001:db8::1');
    expect(ipv6Bytes('2001:0db8:0000:0000:0000:0000:0000:0001')).toEqual(a);
    expect(ipv6Bytes('2001:DB8:0:0::1')).toEqual(a);
    expect(ipv6Bytes('::ffff:1.2.3.4')).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
    expect(ipv6Bytes('::')).toEqual(Array(16).fill(0));
  });
});

describe('endpoint URLs', () => {
  it('accepts an https URL and normalises it', () => {
    expect(checkEndpointUrl('https://hooks.Example.com/cds?x=1', strict)).toEqual({ ok: true, url: 'https://hooks.example.com/cds?x=1' });
    expect(checkEndpointUrl('https://8.8.8.8:8443/in', strict)).toEqual({ ok: true, url: 'https://8.8.8.8:8443/in' });
  });

  it.each([
    ['http://hooks.example.com/', /https/],
    ['ftp://hooks.example.com/', /https/],
    ['hooks.example.com/path', /valid absolute URL/],
    ['https://user:pass@hooks.example.com/', /user-info/],
    ['https://user@hooks.example.com/', /user-info/],
    ['https://hooks.example.com/#frag', /fragment/],
    ['https://hooks.example.com/a b', /white space/],
    ['https://127.0.0.1/', /loopback/],
    ['https://[::1]/', /loopback/],
    ['https://[::ffff:127.0.0.1]/', /loopback/],
    ['https://169.254.169.254/latest/meta-data', /metadata/],
    ['https://10.0.0.8/', /private/],
    ['https://localhost:8443/', /localhost/],
    ['https://api.localhost/', /localhost/],
    ['', /required/],
  ])('refuses %s', (url, problem) => {
    const r = checkEndpointUrl(url, strict);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problem).toMatch(problem);
  });

  it('refuses URLs longer than 2,048 characters and accepts exactly 2,048', () => {
    const base = 'https://hooks.example.com/';
    expect(checkEndpointUrl(base + 'a'.repeat(2048 - base.length), strict).ok).toBe(true);
    expect(checkEndpointUrl(base + 'a'.repeat(2049 - base.length), strict)).toEqual({ ok: false, problem: 'url must be at most 2048 characters' });
  });

  it('with private networks allowed, loopback URLs are accepted (development), metadata still is not', () => {
    expect(checkEndpointUrl('https://127.0.0.1:9443/hook', dev).ok).toBe(true);
    expect(checkEndpointUrl('https://localhost:9443/hook', dev).ok).toBe(true);
    expect(checkEndpointUrl('https://169.254.169.254/', dev).ok).toBe(false);
    expect(checkEndpointUrl('http://127.0.0.1:9443/hook', dev).ok).toBe(false);
  });
});
