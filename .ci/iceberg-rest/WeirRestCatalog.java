// WeirRestCatalog serves Apache Iceberg's own REST catalog (the
// RESTCatalogAdapter and RESTCatalogServlet that Iceberg's REST fixture
// runs, over a JdbcCatalog on a SQLite file and HadoopFileIO on a local
// warehouse) on a loopback address only, for weir's REST catalog tests.
//
//   java -cp 'libs/*:classes' WeirRestCatalog HOST PORT WAREHOUSE_DIR STATE_DIR
import java.io.File;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public class WeirRestCatalog {
  public static void main(String[] args) throws Exception {
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    String warehouse = new File(args[2]).getAbsolutePath();
    String state = new File(args[3]).getAbsolutePath();
    Map<String, String> props = new HashMap<>();
    props.put(CatalogProperties.URI, "jdbc:sqlite:file:" + state + "/catalog.db");
    props.put("jdbc.schema-version", "V1");
    props.put(CatalogProperties.WAREHOUSE_LOCATION, "file://" + warehouse);
    props.put(CatalogProperties.FILE_IO_IMPL, "org.apache.iceberg.hadoop.HadoopFileIO");
    JdbcCatalog catalog = new JdbcCatalog();
    catalog.setConf(new org.apache.hadoop.conf.Configuration());
    catalog.initialize("rest_backend", props);

    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    context.setContextPath("/");
    context.addServlet(new ServletHolder(new RESTCatalogServlet(new RESTCatalogAdapter(catalog))), "/*");
    Server server = new Server(new InetSocketAddress(host, port));
    server.setHandler(context);
    server.start();
    System.out.println("weir-rest-catalog: serving on http://" + host + ":" + port + " warehouse " + warehouse);
    server.join();
  }
}
