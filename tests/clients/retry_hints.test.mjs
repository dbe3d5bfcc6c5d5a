// What the SDKs do with the gateway's refusals, at their defaults (two retries, each after the
// Retry-After the answer gives). A limit on every key the request could use is parked for as
// long as the provider said (an hour for a quota): the 429 says so in Retry-After, and
// x-should-retry: false tells the SDK not to sleep that hour twice before the app hears of it.
// Without it, these calls would hang until the test's timeout.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, TEST_TIMEOUT_MS } from './gateway.mjs';
import { startFakeProvider } from './fake_provider.mjs';

let fake;
let gateway;

before(async () => {
  fake = await startFakeProvider();
  gateway = await startGateway({
    env: { SW_CLIENT_TEST_OPENAI: 'test-openai-credential' },
    config: {
      providers: {
        openai: { api: 'openai-completions', baseUrl: `${fake.baseUrl}/openai/v1`, credentials: ['env:SW_CLIENT_TEST_OPENAI'] },
        down1: { api: 'openai-completions', baseUrl: `${fake.baseUrl}/down1/v1`, credentials: ['env:SW_CLIENT_TEST_OPENAI'] },
        down2: { api: 'openai-completions', baseUrl: `${fake.baseUrl}/down2/v1`, credentials: ['env:SW_CLIENT_TEST_OPENAI'] },
      },
      models: { 'openai/gpt-test': {}, 'down1/m': {}, 'down2/m': {} },
      routes: { down: { candidates: ['down1/m', 'down2/m'] } },
    },
  });
});

after(async () => {
  await gateway?.stop();
  await fake?.close();
});

const quota = {
  status: 429,
  contentType: 'application/json',
  body: JSON.stringify({
    error: { message: 'You exceeded your current quota.', type: 'insufficient_quota', param: null, code: 'insufficient_quota' },
  }),
};

describe('a quota on every key, at the SDKs default retries', { timeout: TEST_TIMEOUT_MS }, () => {
  it('reaches the app at once as a rate limit error that says when the key is back', async () => {
    fake.script('/openai', quota);
    const openai = new OpenAI({ baseURL: `${gateway.baseUrl}/v1`, apiKey: 'client-key' });
    const err = await openai.chat.completions
      .create({ model: 'openai/gpt-test', messages: [{ role: 'user', content: 'hi' }] })
      .then(() => null, (e) => e);
    assert.ok(err instanceof OpenAI.RateLimitError, String(err));
    assert.equal(err.headers.get('x-should-retry'), 'false');
    assert.ok(Number(err.headers.get('retry-after')) > 3000, err.headers.get('retry-after'));
    assert.match(err.message, /quota/);
    assert.equal(fake.requestsTo('/openai').length, 1);

    // The key stays parked: the next call (another SDK, the same model) hears it without a
    // request to the provider, and without sleeping either.
    const anthropic = new Anthropic({ baseURL: gateway.baseUrl, apiKey: 'client-key' });
    const again = await anthropic.messages
      .create({ model: 'openai/gpt-test', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
      .then(() => null, (e) => e);
    assert.ok(again instanceof Anthropic.RateLimitError, String(again));
    assert.equal(again.headers.get('x-should-retry'), 'false');
    assert.equal(fake.requestsTo('/openai').length, 1);
  });
});

// Every candidate of a route down: the gateway fails over and retries its last candidate, then
// answers 503 with the shortest mark in Retry-After. The SDKs sleep any Retry-After and retry
// twice; each retry came as the marks ran out and walked the chain again (one call took a minute
// and twelve upstream requests). x-should-retry: false ends it at the gateway's one walk.
describe('a route whose every candidate is down, at the SDKs default retries', { timeout: TEST_TIMEOUT_MS }, () => {
  it('reaches the app in seconds, after one walk of the chain', async () => {
    const unavailable = {
      status: 503,
      contentType: 'application/json',
      body: JSON.stringify({ error: { message: 'The server is overloaded.', type: 'server_error' } }),
    };
    fake.script('/down1', ...Array(9).fill(unavailable));
    fake.script('/down2', ...Array(9).fill(unavailable));
    const anthropic = new Anthropic({ baseURL: gateway.baseUrl, apiKey: 'client-key' });
    const started = Date.now();
    const err = await anthropic.messages
      .create({ model: 'down', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
      .then(() => null, (e) => e);
    const ms = Date.now() - started;
    assert.ok(err instanceof Anthropic.APIError && err.status === 503, String(err));
    assert.equal(err.headers.get('x-should-retry'), 'false');
    assert.ok(Number(err.headers.get('retry-after')) >= 1, err.headers.get('retry-after'));
    assert.ok(ms < 10000, `${ms} ms`);
    // down1 once (it has a follower), down2 once and its two retries: the gateway's walk, not three.
    assert.equal(fake.requestsTo('/down1').length, 1);
    assert.equal(fake.requestsTo('/down2').length, 3);
  });
});
