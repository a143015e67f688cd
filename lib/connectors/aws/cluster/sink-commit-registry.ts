import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ClusterSinkConfig, ExternalCommitDescriptor } from '../../../cluster/control-items.ts';
import { ConfigError } from '../../../core/index.ts';
import { dynamoDbCommitterFromDescriptor } from '../dynamodb/external-commit.ts';

/** Commits one sink's committables (plain JSON, as the slots wrote them); committing them again changes nothing. */
export interface ExternalCommitter {
  commit(committables: readonly unknown[]): Promise<void>;
}

/** What a committer may use: the coordinator's clients (endpoints and credentials come from its configuration). */
export interface ExternalCommitContext {
  readonly dynamoDbClient: DynamoDBClient;
}

export type ExternalCommitterFactory = (descriptor: ExternalCommitDescriptor, context: ExternalCommitContext) => ExternalCommitter;

/**
 * The committers the cluster's coordinator knows, by `externalCommit.kind` (see TwoPhaseCommitSink.externalCommit):
 * it commits sinks from their JSON descriptors alone and never loads the job's code. A sink whose kind is not
 * registered is a ConfigError naming the sink and the kinds known.
 */
export class SinkCommitRegistry {
  private readonly factories: ReadonlyMap<string, ExternalCommitterFactory>;

  constructor(factories: Readonly<Record<string, ExternalCommitterFactory>>) {
    this.factories = new Map(Object.entries(factories));
  }

  kinds(): string[] {
    return [...this.factories.keys()].sort();
  }

  committerFor(sink: ClusterSinkConfig, context: ExternalCommitContext): ExternalCommitter {
    const factory = this.factories.get(sink.externalCommit.kind);
    if (factory === undefined) {
      throw new ConfigError(
        `sink "${sink.name}" (node ${sink.nodeId}) commits through externalCommit kind "${sink.externalCommit.kind}", ` +
          `which the coordinator does not know (known: ${this.kinds().join(', ')})`,
      );
    }
    return factory(sink.externalCommit, context);
  }
}

/** `dynamodb`: the DynamoDB sink's committer, markers and all, rebuilt from the descriptor. */
const dynamodb: ExternalCommitterFactory = (descriptor, context) => {
  const committer = dynamoDbCommitterFromDescriptor(descriptor, context.dynamoDbClient);
  // Committables are JSON that a DynamoDB sink's writer produced; the committer checks their chunks as it sends them.
  return { commit: (committables) => committer.commit(committables as Parameters<typeof committer.commit>[0]) };
};

export const DEFAULT_SINK_COMMIT_REGISTRY = new SinkCommitRegistry({ dynamodb });
