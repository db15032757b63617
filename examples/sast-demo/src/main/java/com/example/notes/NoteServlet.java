package com.example.notes;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

/** Notes: search and show. A small example for `rcamesh triage`. */
public class NoteServlet extends HttpServlet {

    private final NoteStore store = new NoteStore();

    @Override
    protected void doGet(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String title = request.getParameter("title");
        String owner = Names.normalise(request.getHeader("X-Owner"));

        try (Connection c = store.connection()) {
            // search by title: the title is glued into the query
            Statement st = c.createStatement();
            ResultSet byTitle = st.executeQuery("SELECT id, body FROM notes WHERE title = '" + title + "'");

            // search by owner: a bound parameter, the query text is constant
            PreparedStatement ps = c.prepareStatement("SELECT id, body FROM notes WHERE owner = ?");
            ps.setString(1, owner);
            ResultSet byOwner = ps.executeQuery();

            store.byTag(st, request.getParameter("tag"));
            store.audit(st, "search");

            response.setContentType("text/html;charset=UTF-8");
            response.getWriter().println("<h1>" + Html.escape(title) + "</h1>");
            response.getWriter().println("<p>owner: " + owner + "</p>");
        } catch (java.sql.SQLException e) {
            throw new IOException(e);
        }
    }
}
