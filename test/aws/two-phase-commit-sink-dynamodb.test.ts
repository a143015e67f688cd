import { afterAll, beforeAll } from 'vitest';
import { DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { dynamoDbSink, type DynamoDbSink } from '../../lib/connectors/aws/dynamodb/dynamodb-sink.ts';
import { ensureTable } from '../../lib/connectors/aws/dynamodb/ensure-table.ts';
import { runTwoPhaseCommitSinkContract } from '../contract/two-phase-commit-sink.contract.ts';
import { startDynamoDbLocal, type DynamoDbLocal } from '../harness/aws/dynamodb-local.ts';

interface Row {
  readonly id: string;
}

const MARKER_PREFIX = '#sluice-commit#';

/**
 * The one place this runner builds the implementation. Each record adds 1 to its item's counter, so an item
 * committed twice shows 2; commit markers share the results table (the default), under their key prefix.
 */
function createSink(client: DynamoDBClient, table: string, jobId: string | undefined): DynamoDbSink<Row> {
  return dynamoDbSink<Row>({
    table,
    partitionKey: 'pk',
    ...(jobId === undefined ? {} : { jobId }),
    toWrites: (row) => ({ type: 'update', key: { pk: row.id }, add: { count: 1 } }),
    client,
    retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 4 },
  });
}

let dynamo: DynamoDbLocal;
let tables = 0;

beforeAll(async () => {
  dynamo = await startDynamoDbLocal();
}, 180_000); // DynamoDB Local (a JVM) can take a minute or more to start on a loaded machine

afterAll(async () => {
  await dynamo?.stop();
});

/** A crash of the committing process, as the committer sees it: a call that fails and is not worth retrying. */
function crashed(): Error {
  return Object.assign(new Error('injected crash between transactions'), { name: 'InjectedCrash' });
}

// Without a jobId commits are not fenced; with one every transaction also carries the fence check.
for (const jobId of [undefined, 'contract-job']) {
  const name = `dynamoDbSink (transactional${jobId === undefined ? '' : ', fenced by jobId'}) on DynamoDB Local`;
  runTwoPhaseCommitSinkContract<Row, unknown>(name, async () => {
    const table = `contract-${++tables}`;
    await ensureTable({ tableName: table, partitionKey: { name: 'pk' }, client: dynamo.client });
    let allowed = Number.POSITIVE_INFINITY;
    const client = new DynamoDBClient({ ...dynamo.clientConfig, requestHandler: new NodeHttpHandler(), maxAttempts: 1 });
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
        // A re-commit after a restore comes long after the 10 minutes of a ClientRequestToken: the markers alone must
        // make it a no-op, so no token is sent.
        delete (args.input as { ClientRequestToken?: string }).ClientRequestToken;
        if (allowed <= 0) throw crashed();
        allowed--;
        return next(args);
      },
      { step: 'initialize', name: 'commitFaults' },
    );
    return {
      sink: () => createSink(client, table, jobId),
      record: (id) => ({ id }),
      async visible() {
        const seen: string[] = [];
        let start: Record<string, AttributeValue> | undefined;
        do {
          const page = await dynamo.client.send(new ScanCommand({ TableName: table, ExclusiveStartKey: start, ConsistentRead: true }));
          for (const item of page.Items ?? []) {
            const pk = item['pk']?.S ?? '';
            if (pk.startsWith(MARKER_PREFIX)) continue;
            for (let i = 0; i < Number(item['count']?.N ?? 0); i++) seen.push(pk);
          }
          start = page.LastEvaluatedKey;
        } while (start !== undefined);
        return seen.sort();
      },
      // Staged writes live in memory and in checkpoints only: nothing reaches the table before a commit.
      leftovers: async () => [],
      // 99 writes (98 fenced) and the marker per transaction: 250 records are three.
      recordsForSeveralChunks: 250,
      crashAfterChunks: (chunks) => (allowed = chunks),
      recover: () => (allowed = Number.POSITIVE_INFINITY),
      dispose: async () => client.destroy(),
    };
  });
}
