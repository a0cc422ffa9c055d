//! hearth's codecs: Ballista's own nodes and hearth's barrier operator in an explicit envelope, and
//! functions bound to data (a trained model's `ml_classify`, `ml_regress`) through the [`UdfCodec`]s of the
//! [`Extensions`] a codec is made with.

use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan, ScalarUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use crate::barrier::{BarrierExec, BarrierSpec};
use crate::extension::{Extensions, UdfCodec};
use crate::write::{PartWriterExec, PartWriterSpec};

/// The codecs of bound functions that a hearth codec consults, from its extensions.
#[derive(Debug, Clone)]
struct UdfCodecs(Arc<[UdfCodec]>);

impl UdfCodecs {
    fn new(extensions: &Extensions) -> Self {
        Self(extensions.udf_codecs().into())
    }

    /// Writes a bound function's data; other functions travel by name (nothing written).
    fn encode(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        for codec in self.0.iter() {
            if (codec.encode)(node, buf) {
                break;
            }
        }
        Ok(())
    }

    /// Rebuilds a bound function from its data, or `None` for a function none of the codecs owns.
    fn decode(&self, name: &str, buf: &[u8]) -> Option<Result<Arc<ScalarUDF>>> {
        if buf.is_empty() {
            return None;
        }
        (self.0.iter())
            .find(|codec| codec.names.contains(&name))
            .map(|codec| (codec.decode)(buf))
    }
}

/// The first byte of an encoded node: whose node it is.
const BALLISTA_NODE: u8 = 0;
const BARRIER_NODE: u8 = 1;
const PART_WRITER_NODE: u8 = 2;

/// Encodes [`BarrierExec`] and [`PartWriterExec`] (their specs as JSON) and hands every other node to
/// Ballista's codec.
/// Each node's bytes start with a tag saying which, so foreign bytes are never mistaken for a node.
///
/// ```
/// use std::sync::Arc;
/// use datafusion::physical_plan::empty::EmptyExec;
/// use datafusion::arrow::datatypes::Schema;
/// use datafusion_proto::physical_plan::{DefaultPhysicalProtoConverter, PhysicalExtensionCodec};
/// use hearth_exec::codec::HearthPhysicalCodec;
///
/// let codec = HearthPhysicalCodec::new(&hearth_exec::extension::Extensions::default());
/// let mut buf = Vec::new();
/// // EmptyExec is DataFusion's, not Ballista's: neither codec claims it.
/// assert!(codec.try_encode(Arc::new(EmptyExec::new(Arc::new(Schema::empty()))), &mut buf, &DefaultPhysicalProtoConverter {}).is_err());
/// ```
#[derive(Debug)]
pub struct HearthPhysicalCodec {
    ballista: BallistaPhysicalExtensionCodec,
    udfs: UdfCodecs,
}

impl HearthPhysicalCodec {
    /// The codec of a context with `extensions`, whose bound functions it carries.
    pub fn new(extensions: &Extensions) -> Self {
        Self {
            ballista: BallistaPhysicalExtensionCodec::default(),
            udfs: UdfCodecs::new(extensions),
        }
    }
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
                let (input, spec) = one_input_node::<BarrierSpec>("BarrierExec", spec, inputs)?;
                Ok(Arc::new(BarrierExec::over_slice(input, spec)?))
            }
            Some((&PART_WRITER_NODE, spec)) => {
                let (input, spec) = one_input_node::<PartWriterSpec>("PartWriterExec", spec, inputs)?;
                Ok(Arc::new(PartWriterExec::try_new(input, spec)?))
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
        if let Some(writer) = node.downcast_ref::<PartWriterExec>() {
            buf.push(PART_WRITER_NODE);
            return serde_json::to_writer(buf, writer.spec())
                .map_err(|e| DataFusionError::Internal(format!("cannot encode PartWriterExec: {e}")));
        }
        let mut inner = Vec::new();
        self.ballista.try_encode(node, &mut inner, proto_converter)?;
        buf.push(BALLISTA_NODE);
        buf.extend_from_slice(&inner);
        Ok(())
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        self.udfs
            .decode(name, buf)
            .unwrap_or_else(|| self.ballista.try_decode_udf(name, buf))
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.udfs.encode(node, buf)
    }
}

/// The JSON spec of a hearth node named `name` over one input, and that input.
fn one_input_node<S: serde::de::DeserializeOwned>(
    name: &str,
    spec: &[u8],
    inputs: &[Arc<dyn ExecutionPlan>],
) -> Result<(Arc<dyn ExecutionPlan>, S)> {
    let spec =
        serde_json::from_slice(spec).map_err(|e| DataFusionError::Internal(format!("unreadable {name}: {e}")))?;
    let [input] = inputs else {
        return Err(DataFusionError::Internal(format!(
            "{name} needs one input, got {}",
            inputs.len()
        )));
    };
    Ok((Arc::clone(input), spec))
}

/// The first bytes of an in-memory table's encoding.
const MEMORY_TABLE: &[u8] = b"hearth:MemTable:";

/// The most bytes an in-memory table may take in a plan sent to a fleet: what hearth's fleet accepts in one
/// message ([`FLEET_MESSAGE_BYTES`]), less room for the rest of the plan.
const MEMORY_TABLE_BYTES: usize = FLEET_MESSAGE_BYTES - (8 << 20);

/// The largest gRPC message hearth's sessions, schedulers and executors accept: plans carry in-memory
/// tables (image files read by the driver, frames made from batches), as Spark's tasks carry a parallelized
/// collection.
pub const FLEET_MESSAGE_BYTES: usize = 256 << 20;

/// Writes an in-memory table as its partitions' Arrow IPC streams, each after its length, so it travels in
/// the plan to a scheduler and its executors.
fn encode_memory_table(table: &MemTable, table_ref: &TableReference, buf: &mut Vec<u8>) -> Result<()> {
    let start = buf.len();
    buf.extend_from_slice(MEMORY_TABLE);
    buf.extend_from_slice(&(table.batches.len() as u64).to_le_bytes());
    for partition in &table.batches {
        let batches = partition.try_read().map_err(|_| {
            DataFusionError::Execution(format!(
                "in-memory table {table_ref} is being written to; cannot send it"
            ))
        })?;
        let mut stream = Vec::new();
        let mut writer = StreamWriter::try_new(&mut stream, &table.schema())?;
        for batch in batches.iter() {
            writer.write(batch)?;
        }
        writer.finish()?;
        drop(writer);
        buf.extend_from_slice(&(stream.len() as u64).to_le_bytes());
        buf.extend_from_slice(&stream);
        if buf.len() - start > MEMORY_TABLE_BYTES {
            return Err(DataFusionError::Plan(format!(
                "in-memory table {table_ref} is over {} MiB, too large to send in a plan to the fleet; write it \
                 to files the executors can read (df.write_parquet) and read those instead",
                MEMORY_TABLE_BYTES >> 20
            )));
        }
    }
    Ok(())
}

/// Reads an in-memory table [`encode_memory_table`] wrote.
fn decode_memory_table(
    mut bytes: &[u8],
    table_ref: &TableReference,
    schema: SchemaRef,
    ctx: &TaskContext,
) -> Result<Arc<dyn TableProvider>> {
    let broken = |what: &str| DataFusionError::Internal(format!("in-memory table {table_ref}: {what}"));
    let mut take = |len: usize| -> Result<&[u8]> {
        if bytes.len() < len {
            return Err(broken("the encoding ends early"));
        }
        let (head, rest) = bytes.split_at(len);
        bytes = rest;
        Ok(head)
    };
    let count = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default()) as usize;
    let partitions = count(take(8)?);
    let mut tables = Vec::with_capacity(partitions.min(1 << 16));
    for _ in 0..partitions {
        let len = count(take(8)?);
        let reader = StreamReader::try_new(take(len)?, None)?;
        tables.push(reader.collect::<std::result::Result<Vec<RecordBatch>, _>>()?);
    }
    // As many partitions as the session plans for, the rows where they were and the rest empty: DataFusion
    // 55's `MemorySourceConfig::repartitioned` (which Ballista's stage planning calls on a scan with fewer
    // partitions) drops the scan's `fetch`, so `SELECT * FROM t LIMIT 1` returned every row of a
    // one-partition table. Empty partitions also keep the rows' order for a limit, as in the driver.
    let planned = ctx.session_config().target_partitions();
    tables.resize_with(tables.len().max(planned), Vec::new);
    Ok(Arc::new(MemTable::try_new(schema, tables)?))
}

/// Ballista's logical codec, which also carries model-bound functions (a logical plan that scores with a
/// trained model goes to the scheduler with the model).
#[derive(Debug)]
pub struct HearthLogicalCodec {
    ballista: BallistaLogicalExtensionCodec,
    udfs: UdfCodecs,
}

impl HearthLogicalCodec {
    /// The codec of a context with `extensions`, whose bound functions it carries.
    pub fn new(extensions: &Extensions) -> Self {
        Self {
            ballista: BallistaLogicalExtensionCodec::default(),
            udfs: UdfCodecs::new(extensions),
        }
    }
}

impl LogicalExtensionCodec for HearthLogicalCodec {
    fn try_decode(&self, buf: &[u8], inputs: &[LogicalPlan], ctx: &TaskContext) -> Result<Extension> {
        self.ballista.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.ballista.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match buf.strip_prefix(MEMORY_TABLE) {
            Some(partitions) => decode_memory_table(partitions, table_ref, schema, ctx),
            None => self.ballista.try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        match node.downcast_ref::<MemTable>() {
            Some(table) => encode_memory_table(table, table_ref, buf),
            None => self.ballista.try_encode_table_provider(table_ref, node, buf),
        }
    }

    fn try_decode_file_format(&self, buf: &[u8], ctx: &TaskContext) -> Result<Arc<dyn FileFormatFactory>> {
        self.ballista.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(&self, buf: &mut Vec<u8>, node: Arc<dyn FileFormatFactory>) -> Result<()> {
        self.ballista.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        self.udfs
            .decode(name, buf)
            .unwrap_or_else(|| self.ballista.try_decode_udf(name, buf))
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        self.udfs.encode(node, buf)
    }
}
