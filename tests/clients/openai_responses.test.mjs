// The official OpenAI SDK's Responses API against the gateway's /v1/responses,
// answered by simulated upstreams of other APIs (Anthropic Messages, Google).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { SDK_TIMEOUT_MS, startGateway, TEST_TIMEOUT_MS } from './gateway.mjs';

const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a place',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string' } },
    required: ['location'],
    additionalProperties: false,
  },
  strict: false,
};

let gateway;
let client;

before(async () => {
  gateway = await startGateway();
  client = new OpenAI({ baseURL: `${gateway.baseUrl}/v1`, apiKey: 'demo-key', maxRetries: 0, timeout: SDK_TIMEOUT_MS });
});

after(async () => {
  await gateway?.stop();
});

for (const model of ['sim-anthropic/claude-sim', 'sim-google/gemini-sim']) {
  describe(`responses via ${model}`, { timeout: TEST_TIMEOUT_MS }, () => {
    it('answers a non-streaming request with text and usage', async () => {
      const response = await client.responses.create({ model, input: 'ping', instructions: 'be brief' });
      assert.equal(response.object, 'response');
      assert.equal(response.status, 'completed');
      assert.match(response.output_text, /You said: ping/);
      assert.ok(response.usage.input_tokens > 0, 'input_tokens > 0');
      assert.ok(response.usage.output_tokens > 0, 'output_tokens > 0');
    });

    it('streams text events with increasing sequence numbers and a final response', async () => {
      const stream = await client.responses.create({ model, input: 'ping', stream: true });
      let text = '';
      let last = -1;
      let completed;
      for await (const event of stream) {
        assert.ok(event.sequence_number > last, `sequence_number ${event.sequence_number} after ${last}`);
        last = event.sequence_number;
        if (event.type === 'response.output_text.delta') text += event.delta;
        if (event.type === 'response.completed') completed = event.response;
      }
      assert.match(text, /You said: ping/);
      assert.ok(completed, 'response.completed arrived');
      assert.ok(completed.usage.output_tokens > 0);
    });

    it('makes a function call and reads the result back (non-streaming)', async () => {
      const first = await client.responses.create({ model, input: 'use the tool for Paris', tools: [weatherTool] });
      const call = first.output.find((item) => item.type === 'function_call');
      assert.ok(call, 'a function_call item');
      assert.equal(call.name, 'get_weather');
      assert.deepEqual(JSON.parse(call.arguments), { location: 'demo' });
      const second = await client.responses.create({
        model,
        tools: [weatherTool],
        input: [
          { role: 'user', content: 'use the tool for Paris' },
          { type: 'function_call', call_id: call.call_id, name: call.name, arguments: call.arguments },
          { type: 'function_call_output', call_id: call.call_id, output: 'sunny, 21 C' },
        ],
      });
      assert.equal(second.output_text, 'Tool result received: sunny, 21 C');
    });

    it('streams a function call with the SDK stream helper', async () => {
      const stream = client.responses.stream({ model, input: 'use the tool please', tools: [weatherTool] });
      let args = '';
      stream.on('response.function_call_arguments.delta', (event) => {
        args += event.delta;
      });
      const final = await stream.finalResponse();
      const call = final.output.find((item) => item.type === 'function_call');
      assert.ok(call, 'a function_call item in the final response');
      assert.equal(call.name, 'get_weather');
      assert.equal(args, call.arguments);
      assert.deepEqual(JSON.parse(call.arguments), { location: 'demo' });
    });
  });
}

describe('responses errors', { timeout: TEST_TIMEOUT_MS }, () => {
  it('an unknown model is a 404 APIError', async () => {
    await assert.rejects(client.responses.create({ model: 'nobody/none', input: 'x' }), (error) => {
      assert.equal(error.status, 404);
      return true;
    });
  });
});
