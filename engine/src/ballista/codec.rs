//! The physical extension codec: Ballista's own nodes, and hearth's barrier operator, in an explicit
//! envelope.

use std::sync::Arc;

use ballista_core::serde::BallistaPhysicalExtensionCodec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use crate::barrier::{BarrierExec, BarrierSpec};

/// The first byte of an encoded node: whose node it is.
const BALLISTA_NODE: u8 = 0;
const BARRIER_NODE: u8 = 1;

/// Encodes [`BarrierExec`] (its [`BarrierSpec`] as JSON) and hands every other node to Ballista's codec.
/// Each node's bytes start with a tag saying which, so foreign bytes are never mistaken for a node.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::physical_plan::empty::EmptyExec;
/// use datafusion::arrow::datatypes::Schema;
/// use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
/// use hearth_engine::ballista::HearthPhysicalCodec;
///
/// let codec = HearthPhysicalCodec::default();
/// let mut buf = Vec::new();
/// // EmptyExec is DataFusion's, not Ballista's: neither codec claims it.
/// assert!(codec.try_encode(Arc::new(EmptyExec::new(Arc::new(Schema::empty()))), &mut buf, &DefaultPhysicalProtoConverter {}).is_err());
/// ```
#[derive(Debug, Default)]
pub struct HearthPhysicalCodec {
    ballista: BallistaPhysicalExtensionCodec,
}

impl PhysicalExtensionCodec for HearthPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        match buf.split_first() {
            Some((&BARRIER_NODE, spec)) => {
                let spec: BarrierSpec = serde_json::from_slice(spec)
                    .map_err(|e| DataFusionError::Internal(format!("unreadable BarrierExec: {e}")))?;
                let [input] = inputs else {
                    return Err(DataFusionError::Internal(format!(
                        "BarrierExec needs one input, got {}",
                        inputs.len()
                    )));
                };
                Ok(Arc::new(BarrierExec::over_slice(Arc::clone(input), spec)?))
            }
            Some((&BALLISTA_NODE, node)) => self.ballista.try_decode(node, inputs, ctx, proto_converter),
            Some((tag, _)) => Err(DataFusionError::Internal(format!(
                "unknown node tag {tag}: the plan was encoded by another version"
            ))),
            None => Err(DataFusionError::Internal("an empty extension node".to_string())),
        }
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        if let Some(barrier) = node.downcast_ref::<BarrierExec>() {
            buf.push(BARRIER_NODE);
            return serde_json::to_writer(buf, barrier.spec())
                .map_err(|e| DataFusionError::Internal(format!("cannot encode BarrierExec: {e}")));
        }
        let mut inner = Vec::new();
        self.ballista.try_encode(node, &mut inner, proto_converter)?;
        buf.push(BALLISTA_NODE);
        buf.extend_from_slice(&inner);
        Ok(())
    }
}
