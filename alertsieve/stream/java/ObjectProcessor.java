package alertsieve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
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
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Each object's state, as the objects query keeps it in Spark's state store (see
 * alertsieve/stream/object_state.py, which states the contract: the rows in, the rows out, the
 * state's fields). On the JVM because the state is updated once per alert: Python's
 * transformWithState moved its rows through a Python worker and capped the query at a few
 * thousand objects a second on two cores.
 *
 * <p>The state is one JSON document per object (bands, scores and annotations are open maps):
 * its summary, its latest annotation per annotator, its latest alert's view (JSON) and place,
 * when an alert last named it, and its one timer.
 */
public final class ObjectProcessor extends StatefulProcessor<String, Row, Row> {
  private static final long serialVersionUID = 1L;

  /** Zero point of fluxes in nJy: AB magnitude = 31.4 - 2.5 log10(flux / nJy). */
  static final double NJY_ZERO_POINT = 31.4;

  /** The rows out: the trigger, the object and its annotations as JSON, the latest alert. */
  public static final String OUTPUT_TYPE =
      "_object string, _trigger string, _annotator string, _object_json string,"
          + " _annotations_json string, _view string, _topic string, _partition int,"
          + " _offset bigint, _timestamp timestamp, _key binary, _at_topic string,"
          + " _at_partition int, _at_offset bigint, _alert_size int, _schema_id bigint,"
          + " _reason string, _value binary";

  static final String ALERT = "alert", ANNOTATION = "annotation";
  static final String PENDING = "pending", EVICTED = "evicted", QUARANTINED = "quarantined";

  private static final ObjectMapper JSON = new ObjectMapper();

  private final long ttlMs;
  private transient ValueState<String> state;

  public ObjectProcessor(long ttlMs) {
    this.ttlMs = ttlMs;
  }

  /** ``rows`` (the columns of object_state.INPUT_COLUMNS) through each object's state. */
  public static Dataset<Row> transform(Dataset<Row> rows, long ttlMs) {
    int key = rows.schema().fieldIndex("_object");
    return rows.groupByKey((MapFunction<Row, String>) r -> r.getString(key), Encoders.STRING())
        .transformWithState(
            new ObjectProcessor(ttlMs),
            TimeMode.ProcessingTime(),
            OutputMode.Append(),
            Encoders.row(StructType.fromDDL(OUTPUT_TYPE)));
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    state = getHandle().getValueState("object", Encoders.STRING(), TTLConfig.NONE());
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
    ObjectNode s = state.exists() ? read(state.get()) : newState(key);
    rows.sort(ARRIVAL);
    List<Row> out = new ArrayList<>(rows.size());
    for (Row row : rows) {
      if (ALERT.equals(row.getAs("_kind"))) {
        addAlert(s, row, now);
        out.add(out(key, s, ALERT, null, row));
      } else {
        addAnnotation(s, row);
        String trigger = s.get("alerts").asLong() > 0 ? ANNOTATION : PENDING;
        out.add(out(key, s, trigger, row.getAs("_annotator"), row));
      }
    }
    long seen = s.hasNonNull("seen_ms") ? s.get("seen_ms").asLong() : now;
    long due = seen + ttlMs;
    // Once per object, moved on when it fires early; sooner when the TTL was shortened.
    if (!s.hasNonNull("timer_ms") || s.get("timer_ms").asLong() > due) {
      if (s.hasNonNull("timer_ms")) {
        getHandle().deleteTimer(s.get("timer_ms").asLong());
      }
      s.put("timer_ms", due);
      getHandle().registerTimer(due);
    }
    state.update(s.toString());
    return CollectionConverters.asScala(out.iterator());
  }

  @Override
  public scala.collection.Iterator<Row> handleExpiredTimer(
      String key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    List<Row> out = new ArrayList<>(1);
    if (state.exists()) {
      ObjectNode s = read(state.get());
      long due = (s.hasNonNull("seen_ms") ? s.get("seen_ms").asLong() : 0) + ttlMs;
      if (due > timerValues.getCurrentProcessingTimeInMs()) { // an alert came since it was set
        s.put("timer_ms", due);
        getHandle().registerTimer(due);
        state.update(s.toString());
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
          key, QUARANTINED, null, null, null, null,
          r.getAs("_topic"), r.getAs("_partition"), r.getAs("_offset"), r.getAs("_timestamp"),
          r.getAs("_key"), r.getAs("_topic"), r.getAs("_partition"), r.getAs("_offset"),
          r.getAs("_alert_size"), r.getAs("_schema_id"), r.getAs("_reason"), r.getAs("_value")));
    }
    return out;
  }

  /** Arrival order: Kafka's timestamp, then the place (a batch read again orders the same). */
  private static final Comparator<Row> ARRIVAL =
      Comparator.<Row, Timestamp>comparing(r -> r.getAs("_timestamp"))
          .thenComparing(r -> (String) r.getAs("_topic"))
          .thenComparing(r -> (Integer) r.getAs("_partition"))
          .thenComparing(r -> (Long) r.getAs("_offset"));

  static ObjectNode newState(String id) {
    ObjectNode s = JSON.createObjectNode();
    s.put("id", id);
    s.put("alerts", 0L);
    s.putNull("first_mjd");
    s.putNull("last_mjd");
    s.putObject("bands");
    s.putObject("scores");
    s.putObject("annotations");
    return s;
  }

  private static ObjectNode read(String text) {
    try {
      return (ObjectNode) JSON.readTree(text);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("an object's state is not JSON: " + text, e);
    }
  }

  static Double magnitude(Double flux) {
    return flux == null || !(flux > 0) ? null : NJY_ZERO_POINT - 2.5 * Math.log10(flux);
  }

  static Double fluxOf(Double mag) {
    return mag == null || mag.isNaN() ? null : Math.pow(10, -0.4 * (mag - NJY_ZERO_POINT));
  }

  private static Double number(JsonNode node, String field) {
    JsonNode v = node.get(field);
    return v == null || v.isNull() ? null : v.asDouble();
  }

  private static void put(ObjectNode node, String field, Double value) {
    if (value == null) {
      node.putNull(field);
    } else {
      node.put(field, value);
    }
  }

  /** The state after one more alert: counts, first and last time, the band's latest and
   * brightest detection, the latest of every score, and the alert itself if it is the latest. */
  static void addAlert(ObjectNode s, Row alert, long nowMs) {
    Double mjd = alert.getAs("_mjd");
    String band = alert.getAs("_band");
    s.put("alerts", s.get("alerts").asLong() + 1);
    Double first = number(s, "first_mjd"), last = number(s, "last_mjd");
    if (mjd != null) {
      put(s, "first_mjd", first == null ? mjd : Math.min(first, mjd));
    }
    boolean latest = last == null || (mjd != null && mjd >= last);
    if (mjd != null && latest) {
      put(s, "last_mjd", mjd);
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
      ObjectNode bands = (ObjectNode) s.get("bands");
      ObjectNode b = bands.has(band) ? (ObjectNode) bands.get(band) : bands.putObject(band);
      Double bandLatest = number(b, "latest_mjd");
      if (bandLatest == null || !later(bandLatest, mjd)) {
        put(b, "latest_mag", mag);
        put(b, "latest_flux", flux);
        put(b, "latest_mjd", mjd);
      }
      Double brightest = number(b, "brightest_flux");
      if (flux != null && (brightest == null || flux > brightest)) {
        put(b, "brightest_mag", mag);
        put(b, "brightest_flux", flux);
        put(b, "brightest_mjd", mjd);
      }
    }
    if (latest) {
      String scores = alert.getAs("_scores");
      if (scores != null) {
        ObjectNode mine = (ObjectNode) s.get("scores");
        for (Iterator<Map.Entry<String, JsonNode>> it = read(scores).properties().iterator(); it.hasNext(); ) {
          Map.Entry<String, JsonNode> e = it.next();
          if (!e.getValue().isNull()) {
            mine.set(e.getKey(), e.getValue());
          }
        }
      }
      s.put("view", (String) alert.getAs("_view"));
      s.put("at_topic", (String) alert.getAs("_topic"));
      s.put("at_partition", (Integer) alert.getAs("_partition"));
      s.put("at_offset", (Long) alert.getAs("_offset"));
      s.put("alert_size", (Integer) alert.getAs("_alert_size"));
      s.put("schema_id", (Long) alert.getAs("_schema_id"));
    }
    s.put("seen_ms", nowMs);
  }

  /** Whether time ``a`` is after ``b`` (a known time is after none). */
  private static boolean later(Double a, Double b) {
    return a != null && (b == null || a > b);
  }

  /** The state with the annotation as its annotator's latest (a later one replaces it). */
  static void addAnnotation(ObjectNode s, Row a) {
    ObjectNode note = JSON.createObjectNode();
    note.put("class", (String) a.getAs("_class"));
    put(note, "score", a.getAs("_score"));
    String attributes = a.getAs("_attributes");
    note.set("attributes", attributes == null ? JSON.createObjectNode() : read(attributes));
    Object time = a.getAs("_time");
    Instant at = time instanceof Timestamp t ? t.toInstant() : (Instant) time;
    note.put("time", at == null ? null : at.toString());
    ((ObjectNode) s.get("annotations")).set(a.getAs("_annotator"), note);
  }

  private static final String[] SUMMARY = {"id", "alerts", "first_mjd", "last_mjd", "bands", "scores"};

  /** The row out: an alert's carries that alert (an object's alerts may arrive out of time
   * order: the latest stays the latest), and its bytes when the query carries them; an
   * annotation's the object's latest alert, whose bytes are read again where it publishes. */
  private static Row out(String key, ObjectNode s, String trigger, String annotator, Row row) {
    ObjectNode object = JSON.createObjectNode();
    for (String field : SUMMARY) {
      object.set(field, s.get(field));
    }
    boolean alert = ALERT.equals(trigger);
    return RowFactory.create(
        key,
        trigger,
        annotator,
        object.toString(),
        s.get("annotations").toString(),
        alert ? row.getAs("_view") : text(s, "view"),
        row.getAs("_topic"),
        row.getAs("_partition"),
        row.getAs("_offset"),
        row.getAs("_timestamp"),
        row.getAs("_key"),
        alert ? row.getAs("_topic") : text(s, "at_topic"),
        alert ? row.getAs("_partition") : (s.hasNonNull("at_partition") ? s.get("at_partition").asInt() : null),
        alert ? row.getAs("_offset") : (s.hasNonNull("at_offset") ? s.get("at_offset").asLong() : null),
        alert ? row.getAs("_alert_size") : (s.hasNonNull("alert_size") ? s.get("alert_size").asInt() : null),
        alert ? row.getAs("_schema_id") : (s.hasNonNull("schema_id") ? s.get("schema_id").asLong() : null),
        null,
        alert ? row.getAs("_value") : null);
  }

  private static String text(ObjectNode s, String field) {
    return s.hasNonNull(field) ? s.get(field).asText() : null;
  }
}
