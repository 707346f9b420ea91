import { classroomPrograms } from './classroom-programs.ts';
import { classroomTrainPrograms } from './classroom-train-programs.ts';
import { commPrograms } from './comm-programs.ts';
import { dpTrainPrograms } from './dp-train-programs.ts';
import { gradAccumPrograms } from './grad-accum-programs.ts';
import { layerPrograms } from './layer-programs.ts';
import { moeEpPrograms } from './moe-ep-program.ts';
import { moeLayerPrograms } from './moe-layer-program.ts';
import { pipelinePrograms } from './pipeline-programs.ts';
import { serveRank } from './serve.ts';

serveRank({
  ...commPrograms,
  ...layerPrograms,
  ...classroomPrograms,
  ...classroomTrainPrograms,
  ...dpTrainPrograms,
  ...gradAccumPrograms,
  ...pipelinePrograms,
  ...moeEpPrograms,
  ...moeLayerPrograms,
});
