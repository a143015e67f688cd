import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { tableReadWrite } from './access.ts';
import { aslDefinition, type JobCoordinator } from './job-coordinator.ts';
import type { JobStorage } from './job-storage.ts';
import { handlerFunction } from './lambda-bundling.ts';
import type { SluiceJobSettings } from './sluice-job-props.ts';

/** The control machine's handlers: ASL placeholder, module, and a Lambda timeout below the Tasks' 60 s. */
export const CONTROL_HANDLERS = {
  FileRequest: { placeholder: 'FileRequestFunctionArn', entry: 'functions/control/file-request.ts', timeoutSeconds: 50 },
  AwaitResult: { placeholder: 'AwaitResultFunctionArn', entry: 'functions/control/await-result.ts', timeoutSeconds: 50 },
} as const;
export type ControlHandler = keyof typeof CONTROL_HANDLERS;

export const CONTROL_ASL = 'functions/control/control.asl.json';

/**
 * The Standard *control* state machine: the job managed from the Step Functions console alone. An execution with
 * `{"command": "status" | "savepoint" | "stop" | "resume"}` files the request, waits for the coordinator's answer and
 * ends with it (or fails with a readable cause); `resume` starts a supervisor execution.
 */
export class JobControl extends Construct {
  readonly functions: Readonly<Record<ControlHandler, IFunction>>;
  readonly stateMachine: StateMachine;

  constructor(scope: Construct, id: string, settings: SluiceJobSettings, storage: JobStorage, coordinator: JobCoordinator) {
    super(scope, id);
    const functions: Partial<Record<ControlHandler, IFunction>> = {};
    for (const [name, handler] of Object.entries(CONTROL_HANDLERS) as [ControlHandler, (typeof CONTROL_HANDLERS)[ControlHandler]][]) {
      const role = new Role(this, `${name}Role`, {
        assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
        description: `Sluice ${settings.jobId}: control handler ${name}`,
      });
      // Only the control table: requests, their answers and the status items (functions/control/settings.ts).
      role.addToPolicy(tableReadWrite(storage.controlTable));
      coordinator.logGroup.grantWrite(role);
      functions[name] = handlerFunction(this, `${name}Function`, {
        entry: handler.entry,
        role,
        logGroup: coordinator.logGroup,
        environment: { SLUICE_JOB_ID: settings.jobId, SLUICE_CONTROL_TABLE: storage.controlTable.tableName },
        timeout: Duration.seconds(handler.timeoutSeconds),
        memorySize: 256,
      });
    }
    this.functions = functions as Record<ControlHandler, IFunction>;
    this.stateMachine = new StateMachine(this, 'StateMachine', {
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: aslDefinition(CONTROL_ASL),
      definitionSubstitutions: {
        ...Object.fromEntries(Object.entries(CONTROL_HANDLERS).map(([name, h]) => [h.placeholder, this.functions[name as ControlHandler].functionArn])),
        SupervisorStateMachineArn: coordinator.supervisor.stateMachineArn,
      },
      logs: {
        destination: new LogGroup(this, 'Logs', { retention: RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.DESTROY }),
        level: LogLevel.ALL,
        includeExecutionData: true,
      },
      tracingEnabled: true,
    });
    this.stateMachine.addToRolePolicy(
      new PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: Object.values(this.functions).map((f) => f.functionArn) }),
    );
    // `resume` starts the supervisor (fire and forget: the supervisor runs for the job's lifetime).
    this.stateMachine.addToRolePolicy(new PolicyStatement({ actions: ['states:StartExecution'], resources: [coordinator.supervisor.stateMachineArn] }));
  }
}
