import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ArnFormat, CustomResource, Duration, Names, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Effect, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { checkpointObjects, tableReadWrite } from './access.ts';
import type { JobStorage } from './job-storage.ts';
import { handlerFunction, REPO_ROOT } from './lambda-bundling.ts';
import type { SluiceJobSettings } from './sluice-job-props.ts';

/** The coordinator's handlers: ASL placeholder, module, and a Lambda timeout below the Task's TimeoutSeconds. */
export const COORDINATOR_HANDLERS = {
  Recover: { placeholder: 'RecoverFunctionArn', entry: 'functions/coordinator/recover.ts', timeoutSeconds: 100 },
  Trigger: { placeholder: 'TriggerFunctionArn', entry: 'functions/coordinator/trigger.ts', timeoutSeconds: 50 },
  CollectAcks: { placeholder: 'CollectAcksFunctionArn', entry: 'functions/coordinator/collect-acks.ts', timeoutSeconds: 100 },
  CommitSinks: { placeholder: 'CommitSinksFunctionArn', entry: 'functions/coordinator/commit-sinks.ts', timeoutSeconds: 100 },
  Abort: { placeholder: 'AbortFunctionArn', entry: 'functions/coordinator/abort.ts', timeoutSeconds: 50 },
} as const;
export type CoordinatorHandler = keyof typeof COORDINATOR_HANDLERS;

/** Handlers that commit sinks (Recover commits what is still pending): only they may write the sink tables. */
const SINK_COMMITTERS: ReadonlySet<CoordinatorHandler> = new Set(['Recover', 'CommitSinks']);

export const SUPERVISOR_ASL = 'functions/coordinator/supervisor.asl.json';
export const CYCLES_ASL = 'functions/coordinator/cycles.asl.json';
export const SUPERVISOR_RESOURCE_ENTRY = 'functions/deploy/supervisor-resource.ts';

/** The ASL file as it is: the CDK app only substitutes its ${Placeholders}. */
export function aslDefinition(file: string): DefinitionBody {
  return DefinitionBody.fromString(readFileSync(join(REPO_ROOT, file), 'utf8'));
}

/**
 * The Step Functions coordinator: the handler functions, the Standard supervisor and the Express cycles machines
 * from their ASL files, and the custom resource that starts the supervisor on create and stops it on delete.
 */
export class JobCoordinator extends Construct {
  readonly functions: Readonly<Record<CoordinatorHandler, IFunction>>;
  readonly supervisor: StateMachine;
  readonly cycles: StateMachine;
  readonly logGroup: LogGroup;
  /** The environment every handler runs with (functions/coordinator/settings.ts). */
  readonly environment: Readonly<Record<string, string>>;
  /** Execution ARN patterns granted (per-execution ARNs exist only at run time), with the construct holding them. */
  readonly executionWildcards: readonly (readonly [Construct, string])[];

  constructor(scope: Construct, id: string, settings: SluiceJobSettings, storage: JobStorage) {
    super(scope, id);
    const stack = Stack.of(this);
    this.logGroup = new LogGroup(this, 'HandlerLogs', { retention: RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY });
    this.environment = {
      SLUICE_JOB_ID: settings.jobId,
      SLUICE_CONTROL_TABLE: storage.controlTable.tableName,
      SLUICE_CHECKPOINT_DIR: storage.checkpointDir,
    };
    const sinkTableArns = settings.sinkTables.map((name) =>
      stack.formatArn({ service: 'dynamodb', resource: 'table', resourceName: name, arnFormat: ArnFormat.SLASH_RESOURCE_NAME }),
    );
    const functions: Partial<Record<CoordinatorHandler, IFunction>> = {};
    for (const [name, handler] of Object.entries(COORDINATOR_HANDLERS) as [CoordinatorHandler, (typeof COORDINATOR_HANDLERS)[CoordinatorHandler]][]) {
      const role = new Role(this, `${name}Role`, {
        assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
        description: `Sluice ${settings.jobId}: coordinator handler ${name}`,
      });
      // Every handler opens the session: control and commit tables, checkpoint objects (a pending metadata commit
      // is finished by whichever handler runs next).
      role.addToPolicy(tableReadWrite(storage.controlTable, storage.commitTable));
      for (const statement of checkpointObjects(storage.bucket, settings.jobId)) role.addToPolicy(statement);
      if (SINK_COMMITTERS.has(name) && sinkTableArns.length > 0) {
        role.addToPolicy(
          new PolicyStatement({
            effect: Effect.ALLOW,
            actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem', 'dynamodb:BatchWriteItem', 'dynamodb:DescribeTable'],
            resources: sinkTableArns,
          }),
        );
      }
      this.logGroup.grantWrite(role);
      functions[name] = handlerFunction(this, `${name}Function`, {
        entry: handler.entry,
        role,
        logGroup: this.logGroup,
        environment: this.environment,
        timeout: Duration.seconds(handler.timeoutSeconds),
      });
    }
    this.functions = functions as Record<CoordinatorHandler, IFunction>;

    // The supervisor names itself (ContinueAsNew) and the cycles executions it waits on: fixed names make both ARNs
    // known before the machines exist, without a circular reference.
    const base = Names.uniqueResourceName(this, { maxLength: 60, separator: '-' });
    const supervisorName = `${base}-supervisor`;
    const cyclesName = `${base}-cycles`;
    const arn = (resource: string, name: string): string =>
      stack.formatArn({ service: 'states', resource, resourceName: name, arnFormat: ArnFormat.COLON_RESOURCE_NAME });
    const supervisorArn = arn('stateMachine', supervisorName);
    const cyclesArn = arn('stateMachine', cyclesName);
    const substitutions = Object.fromEntries(
      Object.entries(COORDINATOR_HANDLERS).map(([name, handler]) => [handler.placeholder, this.functions[name as CoordinatorHandler].functionArn]),
    );

    this.cycles = new StateMachine(this, 'Cycles', {
      stateMachineName: cyclesName,
      stateMachineType: StateMachineType.EXPRESS,
      definitionBody: aslDefinition(CYCLES_ASL),
      definitionSubstitutions: substitutions,
      logs: { destination: this.machineLogs('CyclesLogs'), level: LogLevel.ALL, includeExecutionData: true },
      tracingEnabled: true,
    });
    this.invokes(this.cycles, ['Trigger', 'CollectAcks', 'CommitSinks', 'Abort']);

    this.supervisor = new StateMachine(this, 'Supervisor', {
      stateMachineName: supervisorName,
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: aslDefinition(SUPERVISOR_ASL),
      definitionSubstitutions: { ...substitutions, CyclesStateMachineArn: cyclesArn, SupervisorStateMachineArn: supervisorArn },
      logs: { destination: this.machineLogs('SupervisorLogs'), level: LogLevel.ALL, includeExecutionData: true },
      tracingEnabled: true,
    });
    this.invokes(this.supervisor, ['Recover', 'Abort']);
    // RunCycles (startExecution.sync:2) starts cycles and follows it through an EventBridge managed rule;
    // ContinueAsNew starts the supervisor itself.
    this.supervisor.addToRolePolicy(new PolicyStatement({ actions: ['states:StartExecution'], resources: [cyclesArn, supervisorArn] }));
    const cyclesExecutions = [arn('execution', `${cyclesName}:*`), arn('express', `${cyclesName}:*`)];
    this.supervisor.addToRolePolicy(new PolicyStatement({ actions: ['states:DescribeExecution', 'states:StopExecution'], resources: cyclesExecutions }));
    this.supervisor.addToRolePolicy(
      new PolicyStatement({
        actions: ['events:PutTargets', 'events:PutRule', 'events:DescribeRule'],
        resources: [stack.formatArn({ service: 'events', resource: 'rule', resourceName: 'StepFunctionsGetEventsForStepFunctionsExecutionRule' })],
      }),
    );
    this.supervisor.node.addDependency(this.cycles);

    const resourceRole = new Role(this, 'SupervisorResourceRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Sluice ${settings.jobId}: starts the supervisor on create, stops it on delete`,
    });
    resourceRole.addToPolicy(new PolicyStatement({ actions: ['states:StartExecution', 'states:ListExecutions'], resources: [supervisorArn] }));
    const supervisorExecutions = arn('execution', `${supervisorName}:*`);
    resourceRole.addToPolicy(new PolicyStatement({ actions: ['states:StopExecution'], resources: [supervisorExecutions] }));
    this.executionWildcards = [...cyclesExecutions.map((e) => [this.supervisor, e] as const), [resourceRole, supervisorExecutions] as const];
    this.logGroup.grantWrite(resourceRole);
    const resourceFunction = handlerFunction(this, 'SupervisorResourceFunction', {
      entry: SUPERVISOR_RESOURCE_ENTRY,
      role: resourceRole,
      logGroup: this.logGroup,
      environment: {},
      timeout: Duration.seconds(60),
      memorySize: 256,
    });
    const start = new CustomResource(this, 'SupervisorRunning', {
      serviceToken: resourceFunction.functionArn,
      resourceType: 'Custom::SluiceSupervisor',
      properties: { SupervisorArn: this.supervisor.stateMachineArn },
    });
    // Started after, and stopped before, everything the supervisor's executions use.
    start.node.addDependency(this.supervisor, this.cycles, storage);
  }

  private machineLogs(id: string): LogGroup {
    return new LogGroup(this, id, { retention: RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY });
  }

  private invokes(machine: StateMachine, handlers: readonly CoordinatorHandler[]): void {
    machine.addToRolePolicy(
      new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: handlers.map((h) => this.functions[h].functionArn) }),
    );
  }
}
