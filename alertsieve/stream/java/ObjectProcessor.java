package alertsieve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Each object's state, as the objects query keeps it in Spark's state store (see
 * alertsieve/stream/object_state.py, which states the contract: the rows in, the rows out). On
 * the JVM because it runs once per alert: Python's transformWithState moved every row through a
 * Python worker and capped the query at a few thousand objects a second on two cores.
 *
 * <p>The state is one typed row per object, as filters read it: its summary ({@code object}),
 * its latest annotation per annotator ({@code annotations}), its latest alert's view fields and
 * place, when an alert last named it, and its one timer. Its types come from the caller (the
 * view's, and those of alertsieve/filtering/objects.py), so they are written in one place.
 */
public final class ObjectProcessor extends StatefulProcessor<String, Row, Row> {
  private static final long serialVersionUID = 2L;

  /** Zero point of fluxes in nJy: AB magnitude = 31.4 - 2.5 log10(flux / nJy). */
  static final double NJY_ZERO_POINT = 31.4;

  static final String ALERT = "alert", ANNOTATION = "annotation";
  static final String PENDING = "pending", EVICTED = "evicted", QUARANTINED = "quarantined";

  /** The rows out, less the types given by the caller (their columns follow these). */
  static final String OUTPUT_FIXED =
      "_object string, _trigger string, _annotator string, _topic string, _partition int,"
          + " _offset bigint, _timestamp timestamp, _key binary, _at_topic string,"
          + " _at_partition int, _at_offset bigint, _alert_size int, _schema_id bigint,"
          + " _reason string, _value binary";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final long ttlMs;
  private final StructType stateType;
  private final StructType objectType;
  private final StructType bandType;
  private final StructType annotationType;
  private transient ValueState<Row> state;

  private ObjectProcessor(long ttlMs, StructType stateType) {
    this.ttlMs = ttlMs;
    this.stateType = stateType;
    this.objectType = (StructType) stateType.apply("object").dataType();
    this.bandType = (StructType) ((MapType) objectType.apply("bands").dataType()).valueType();
    this.annotationType =
        (StructType) ((MapType) stateType.apply("annotations").dataType()).valueType();
  }

  /**
   * {@code rows} (the columns of object_state.INPUT_COLUMNS, {@code _view} a struct) through
   * each object's state; {@code objectType} and {@code annotationsType} are what filters read as
   * {@code object} and {@code annotations} (DDL). Out: OUTPUT_FIXED, then {@code _summary} (the
   * object), {@code _annotations} and {@code _view}.
   */
  public static Dataset<Row> transform(
      Dataset<Row> rows, long ttlMs, String objectType, String annotationsType) {
    DataType view = rows.schema().apply("_view").dataType();
    StructType stateType =
        new StructType()
            .add("object", DataType.fromDDL(objectType))
            .add("annotations", DataType.fromDDL(annotationsType))
            .add("view", view)
            .add("at_topic", "string")
            .add("at_partition", "int")
            .add("at_offset", "bigint")
            .add("alert_size", "int")
            .add("schema_id", "bigint")
            .add("seen_ms", "bigint")
            .add("timer_ms", "bigint");
    StructType out =
        StructType.fromDDL(OUTPUT_FIXED)
            .add("_summary", stateType.apply("object").dataType())
            .add("_annotations", stateType.apply("annotations").dataType())
            .add("_view", view);
    int key = rows.schema().fieldIndex("_object");
    return rows.groupByKey((MapFunction<Row, String>) r -> r.getString(key), Encoders.STRING())
        .transformWithState(
            new ObjectProcessor(ttlMs, stateType),
            TimeMode.ProcessingTime(),
            OutputMode.Append(),
            Encoders.row(out));
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    state = getHandle().getValueState("object", Encoders.row(stateType), TTLConfig.NONE());
  }

  /** One object's state while its rows are applied (read from and written to its row). */
  private static final class State {
    String id;
    long alerts;
    Double firstMjd, lastMjd;
    Map<String, Map<String, Double>> bands = new LinkedHashMap<>();
    Map<String, Double> scores = new LinkedHashMap<>();
    Map<String, Row> annotations = new LinkedHashMap<>();
    Row view;
    String atTopic;
    Integer atPartition, alertSize;
    Long atOffset, schemaId, seenMs, timerMs;
  }

  @Override
  public scala.collection.Iterator<Row> handleInputRows(
      String key, scala.collection.Iterator<Row> inputRows, TimerValues timerValues) {
    List<Row> rows = new ArrayList<>();
    inputRows.foreach(rows::add);
    if (QUARANTINED.equals(rows.get(0).getAs("_kind"))) {
      return CollectionConverters.asScala(quarantined(key, rows).iterator());
    }
    long now = timerValues.getCurrentProcessingTimeInMs();
    State s = state.exists() ? read(state.get()) : fresh(key);
    rows.sort(ARRIVAL);
    List<Row> out = new ArrayList<>(rows.size());
    Row summary = null, annotations = null;
    for (Row row : rows) {
      boolean alert = ALERT.equals(row.getAs("_kind"));
      if (alert) {
        addAlert(s, row, now);
      } else {
        addAnnotation(s, row);
      }
      String trigger = alert ? ALERT : s.alerts > 0 ? ANNOTATION : PENDING;
      out.add(out(key, s, trigger, alert ? null : row.getAs("_annotator"), row));
    }
    long due = (s.seenMs != null ? s.seenMs : now) + ttlMs;
    // Once per object, moved on when it fires early; sooner when the TTL was shortened.
    if (s.timerMs == null || s.timerMs > due) {
      if (s.timerMs != null) {
        getHandle().deleteTimer(s.timerMs);
      }
      s.timerMs = due;
      getHandle().registerTimer(due);
    }
    state.update(write(s));
    return CollectionConverters.asScala(out.iterator());
  }

  @Override
  public scala.collection.Iterator<Row> handleExpiredTimer(
      String key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    List<Row> out = new ArrayList<>(1);
    if (state.exists()) {
      State s = read(state.get());
      long due = (s.seenMs != null ? s.seenMs : 0) + ttlMs;
      if (due > timerValues.getCurrentProcessingTimeInMs()) { // an alert came since it was set
        s.timerMs = due;
        getHandle().registerTimer(due);
        state.update(write(s));
      } else {
        state.clear();
        Object[] evicted = new Object[18];
        evicted[0] = key;
        evicted[1] = EVICTED;
        out.add(RowFactory.create(evicted));
      }
    }
    return CollectionConverters.asScala(out.iterator());
  }

  /** Rows that did not decode or parse, each keyed by its own place: passed through (no state),
   * so the query reads and decodes its input once and quarantines them from the same rows. */
  private static List<Row> quarantined(String key, List<Row> rows) {
    List<Row> out = new ArrayList<>(rows.size());
    for (Row r : rows) {
      out.add(RowFactory.create(
          key, QUARANTINED, null, r.getAs("_topic"), r.getAs("_partition"), r.getAs("_offset"),
          r.getAs("_timestamp"), r.getAs("_key"), r.getAs("_topic"), r.getAs("_partition"),
          r.getAs("_offset"), r.getAs("_alert_size"), r.getAs("_schema_id"), r.getAs("_reason"),
          r.getAs("_value"), null, null, null));
    }
    return out;
  }

  /** Arrival order: Kafka's timestamp, then the place (a batch read again orders the same). */
  private static final Comparator<Row> ARRIVAL =
      Comparator.<Row, java.util.Date>comparing(r -> r.getAs("_timestamp"))
          .thenComparing(r -> (String) r.getAs("_topic"))
          .thenComparing(r -> (Integer) r.getAs("_partition"))
          .thenComparing(r -> (Long) r.getAs("_offset"));

  private static State fresh(String id) {
    State s = new State();
    s.id = id;
    return s;
  }

  static Double magnitude(Double flux) {
    return flux == null || !(flux > 0) ? null : NJY_ZERO_POINT - 2.5 * Math.log10(flux);
  }

  static Double fluxOf(Double mag) {
    return mag == null || mag.isNaN() ? null : Math.pow(10, -0.4 * (mag - NJY_ZERO_POINT));
  }

  /** Whether time {@code a} is after {@code b} (a known time is after none). */
  private static boolean later(Double a, Double b) {
    return a != null && (b == null || a > b);
  }

  /** The state after one more alert: counts, first and last time, the band's latest and
   * brightest detection, the latest of every score, and the alert itself if it is the latest. */
  private static void addAlert(State s, Row alert, long nowMs) {
    Double mjd = alert.getAs("_mjd");
    String band = alert.getAs("_band");
    s.alerts += 1;
    if (mjd != null) {
      s.firstMjd = s.firstMjd == null ? mjd : Math.min(s.firstMjd, mjd);
    }
    boolean latest = s.lastMjd == null || (mjd != null && mjd >= s.lastMjd);
    if (mjd != null && latest) {
      s.lastMjd = mjd;
    }
    Double flux = alert.getAs("_flux");
    Double mag = alert.getAs("_mag");
    if (flux == null) {
      flux = fluxOf(mag);
    }
    if (mag == null) {
      mag = magnitude(flux);
    }
    if (band != null && (flux != null || mag != null)) {
      Map<String, Double> b = s.bands.computeIfAbsent(band, k -> new HashMap<>());
      if (b.get("latest_mjd") == null || !later(b.get("latest_mjd"), mjd)) {
        b.put("latest_mag", mag);
        b.put("latest_flux", flux);
        b.put("latest_mjd", mjd);
      }
      Double brightest = b.get("brightest_flux");
      if (flux != null && (brightest == null || flux > brightest)) {
        b.put("brightest_mag", mag);
        b.put("brightest_flux", flux);
        b.put("brightest_mjd", mjd);
      }
    }
    if (latest) {
      String scores = alert.getAs("_scores");
      if (scores != null) {
        for (Iterator<Map.Entry<String, JsonNode>> it = parse(scores).properties().iterator();
            it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          if (!e.getValue().isNull()) {
            s.scores.put(e.getKey(), e.getValue().asDouble());
          }
        }
      }
      s.view = alert.getAs("_view");
      s.atTopic = alert.getAs("_topic");
      s.atPartition = alert.getAs("_partition");
      s.atOffset = alert.getAs("_offset");
      s.alertSize = alert.getAs("_alert_size");
      s.schemaId = alert.getAs("_schema_id");
    }
    s.seenMs = nowMs;
  }

  /** The state with the annotation as its annotator's latest (a later one replaces it). */
  private void addAnnotation(State s, Row a) {
    Map<String, String> attributes = a.isNullAt(a.fieldIndex("_attributes"))
        ? new HashMap<>() : a.getJavaMap(a.fieldIndex("_attributes"));
    Map<String, Object> note = new HashMap<>();
    note.put("class", a.getAs("_class"));
    note.put("score", a.getAs("_score"));
    note.put("attributes", CollectionConverters.asScala(attributes));
    note.put("time", a.getAs("_time"));
    s.annotations.put(a.getAs("_annotator"), rowOf(annotationType, note));
  }

  private static JsonNode parse(String text) {
    try {
      return JSON.readTree(text);
    } catch (IOException e) {
      throw new IllegalArgumentException("an alert's scores are not JSON: " + text, e);
    }
  }

  /** A row of {@code type} from its fields by name (absent ones null). */
  private static Row rowOf(StructType type, Map<String, ?> values) {
    String[] names = type.fieldNames();
    Object[] fields = new Object[names.length];
    for (int i = 0; i < names.length; i++) {
      fields[i] = values.get(names[i]);
    }
    return RowFactory.create(fields);
  }

  private Row summary(State s) {
    Map<String, Row> bands = new LinkedHashMap<>();
    s.bands.forEach((band, b) -> bands.put(band, rowOf(bandType, b)));
    Map<String, Object> object = new HashMap<>();
    object.put("id", s.id);
    object.put("alerts", s.alerts);
    object.put("first_mjd", s.firstMjd);
    object.put("last_mjd", s.lastMjd);
    object.put("bands", CollectionConverters.asScala(bands));
    object.put("scores", CollectionConverters.asScala(new LinkedHashMap<>(s.scores)));
    return rowOf(objectType, object);
  }

  private Row write(State s) {
    return RowFactory.create(
        summary(s), CollectionConverters.asScala(s.annotations), s.view, s.atTopic,
        s.atPartition, s.atOffset, s.alertSize, s.schemaId, s.seenMs, s.timerMs);
  }

  private State read(Row r) {
    State s = new State();
    Row object = r.getStruct(0);
    s.id = object.getAs("id");
    s.alerts = object.<Long>getAs("alerts");
    s.firstMjd = object.getAs("first_mjd");
    s.lastMjd = object.getAs("last_mjd");
    Map<String, Row> bands = object.getJavaMap(object.fieldIndex("bands"));
    for (Map.Entry<String, Row> e : bands.entrySet()) {
      Map<String, Double> b = new HashMap<>();
      for (String name : bandType.fieldNames()) {
        b.put(name, e.getValue().getAs(name));
      }
      s.bands.put(e.getKey(), b);
    }
    s.scores.putAll(object.getJavaMap(object.fieldIndex("scores")));
    s.annotations.putAll(r.getJavaMap(1));
    s.view = r.getStruct(2);
    s.atTopic = r.getAs("at_topic");
    s.atPartition = r.getAs("at_partition");
    s.atOffset = r.getAs("at_offset");
    s.alertSize = r.getAs("alert_size");
    s.schemaId = r.getAs("schema_id");
    s.seenMs = r.getAs("seen_ms");
    s.timerMs = r.getAs("timer_ms");
    return s;
  }

  /** The row out: an alert's carries that alert (an object's alerts may arrive out of time
   * order: the latest stays the latest), and its bytes when the query carries them; an
   * annotation's the object's latest alert, whose bytes are read again where it publishes. */
  private Row out(String key, State s, String trigger, String annotator, Row row) {
    boolean alert = ALERT.equals(trigger);
    return RowFactory.create(
        key, trigger, annotator,
        row.getAs("_topic"), row.getAs("_partition"), row.getAs("_offset"),
        row.getAs("_timestamp"), row.getAs("_key"),
        alert ? row.getAs("_topic") : s.atTopic,
        alert ? row.getAs("_partition") : s.atPartition,
        alert ? row.getAs("_offset") : s.atOffset,
        alert ? row.getAs("_alert_size") : s.alertSize,
        alert ? row.getAs("_schema_id") : s.schemaId,
        null,
        alert ? row.getAs("_value") : null,
        // copies: the rows out are written after the object's later rows changed its maps
        summary(s), CollectionConverters.asScala(new LinkedHashMap<>(s.annotations)),
        alert ? row.getAs("_view") : s.view);
  }
}
